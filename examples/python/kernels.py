#!/usr/bin/env python3
"""A post-processing script to start from: the GPU kernels of a run.

    gpuprof run -o out -- ./app          # or a program calling gpuprof_init
    gpuprof analyze -o out-db out
    PYTHONPATH=python /usr/bin/python3 examples/python/kernels.py out-db [--csv FILE]

(an interpreter with pandas: Debian's /usr/bin/python3 with python3-pandas,
or a venv made from it with --system-site-packages; another one gets an
error saying so).
Prints each kernel's launches and device time summed over every thread and
process, its share of all device time, the mean per launch, and the source
line or frame it was launched from most; with --csv writes the same table
for a spreadsheet. Everything comes from gpuprof.open(): contexts() says
what each calling context is, values() holds every measured value in long
form, so the rest is ordinary pandas.
"""
import argparse
import sys

import gpuprof

pd = gpuprof.need_pandas()  # pandas, or an error naming the fix


def launch_site(ctx, parent, c):
    """The nearest source line (or CPU frame) above context c."""
    kind = dict(zip(ctx["context"], ctx["kind"]))
    name = dict(zip(ctx["context"], ctx["name"]))
    while c is not None:
        if kind[c] in ("line", "frame"):
            return name[c]
        p = parent[c]
        c = None if p is None else int(p)
    return ""


def kernel_table(db):
    ctx, v = db.contexts(), db.values()
    parent = {c: (None if p is pd.NA else int(p))
              for c, p in zip(ctx["context"], ctx["parent"])}
    kernels = ctx[ctx["kind"] == "kernel"][["context", "name"]]
    # A kernel's name without the binary it came from ("kernel k [file]").
    kernels = kernels.assign(kernel=kernels["name"].str.replace(
        r"^kernel (.*?)( \[.*\])?$", r"\1", regex=True))
    mine = v[v["metric"].isin(["gpu.time", "gpu.count"])]
    mine = mine.merge(kernels, on="context")
    wide = mine.pivot_table(index=["kernel", "context"], columns="metric",
                            values="value", aggfunc="sum", fill_value=0)
    wide = wide.reset_index()
    wide["site"] = [launch_site(ctx, parent, c) for c in wide["context"]]
    # Per kernel: sums, and the launch site with the most device time.
    top_site = (wide.sort_values("gpu.time", ascending=False)
                .drop_duplicates("kernel").set_index("kernel")["site"])
    # Launches and nanoseconds are whole numbers (values() gives floats).
    table = wide.groupby("kernel")[["gpu.count", "gpu.time"]].sum().astype(
        "int64")
    table["site"] = top_site
    total = table["gpu.time"].sum()
    table["share"] = table["gpu.time"] / total if total else 0.0
    table["mean_ns"] = table["gpu.time"] / table["gpu.count"].where(
        table["gpu.count"] > 0)
    return table.sort_values("gpu.time", ascending=False)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("database")
    ap.add_argument("--csv", help="also write the table to this file")
    args = ap.parse_args(argv)
    with gpuprof.open(args.database) as db:
        table = kernel_table(db)
    if table.empty:
        print("no kernels in %s" % args.database)
        return 0
    print("%-24s %8s %14s %7s %12s  %s" % ("kernel", "launches", "device ns",
                                           "share", "mean ns", "launched at"))
    for k, r in table.iterrows():
        print("%-24s %8d %14d %6.1f%% %12.1f  %s"
              % (k, r["gpu.count"], r["gpu.time"], 100 * r["share"],
                 r["mean_ns"], r["site"]))
    if args.csv:
        table.to_csv(args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
