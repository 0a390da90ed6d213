"""Tests of the gpuprof Python package (run by tests/scripts/python.sh).

GPUPROF_TEST_SIMDB: the analysis database of tests/sim/sim_demo (2 host
threads, each: setup() copies 8 MiB host-to-device in 16000 ns and runs a
graph of init_a 500 ns and init_b 700 ns; then 20 steps of stencil 3000 ns,
reduce 1000 ns and a 1 MiB device-to-host copy of 2000 ns), measured with
GPUPROF_TRACE=1. GPUPROF_TEST_BIN: the gpuprof command, to analyse what the
measurement tests write. Exact values throughout.
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import gpuprof

SIMDB = os.environ.get("GPUPROF_TEST_SIMDB")
GBIN = os.environ.get("GPUPROF_TEST_BIN")


@unittest.skipUnless(SIMDB, "GPUPROF_TEST_SIMDB not set")
class SimDatabase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = gpuprof.open(SIMDB)

    @classmethod
    def tearDownClass(cls):
        cls.db.close()

    def test_contexts(self):
        ctx = self.db.contexts()
        self.assertEqual(list(ctx.columns),
                         ["context", "parent", "kind", "name", "file", "line",
                          "binary", "runtime"])
        # Every context, with the runtime's frames; fewer without.
        every = self.db.contexts(runtime_frames=True)
        self.assertEqual(list(every["context"]), list(range(len(every))))
        self.assertTrue(ctx["context"].is_monotonic_increasing)
        root = ctx.iloc[0]
        self.assertEqual((root["kind"], root["name"]),
                         ("root", "<program root>"))
        self.assertTrue(root["parent"] is __import__("pandas").NA)
        # Parents precede children.
        self.assertTrue(all(int(p) < c for c, p in
                            zip(ctx["context"][1:], ctx["parent"][1:])))
        kernels = sorted(set(ctx[ctx["kind"] == "kernel"]["name"]))
        self.assertEqual(kernels, ["kernel init_a", "kernel init_b",
                                   "kernel reduce", "kernel stencil"])
        self.assertEqual(sorted(set(ctx[ctx["kind"] == "region"]["name"])),
                         ["setup", "timesteps"])
        lines = ctx[ctx["kind"] == "line"]
        self.assertTrue(len(lines) > 0)
        row = lines[lines["name"] == "sim_demo.c:30"].iloc[0]
        self.assertEqual((row["file"], row["line"]), ("sim_demo.c", 30))
        self.assertTrue(ctx[ctx["kind"] != "line"]["line"].isna().all())

    def test_runtime_frames(self):
        """The C library's thread start is left out: each host thread's
        path starts at "<thread root>" -> rank_thread; every sum stays."""
        ctx = self.db.contexts()
        every = self.db.contexts(runtime_frames=True)
        self.assertGreater(len(every), len(ctx))
        self.assertTrue(set(ctx["context"]) < set(every["context"]))
        roots = ctx[ctx["name"] == "<thread root>"]
        self.assertGreater(len(roots), 0)
        self.assertTrue(roots["runtime"].all())
        self.assertFalse(any(n.startswith(("start_thread", "__clone", "clone"))
                             for n in ctx["name"]))
        self.assertNotIn("<thread root>", set(every["name"]))
        name = dict(zip(ctx["context"], ctx["name"]))
        below = {name[c] for c, p in zip(ctx["context"], ctx["parent"])
                 if p is not __import__("pandas").NA and int(p) in
                 set(roots["context"])}
        self.assertEqual(below, {"rank_thread (sim_demo)"})
        for rf in (False, True):
            v = self.db.view("gpu.time", runtime_frames=rf)
            self.assertEqual(v.loc[0, "gpu.time (inc)"], 274400)
            self.assertEqual(v["gpu.time"].sum(), 274400)
            vals = self.db.values(runtime_frames=rf)
            self.assertEqual(vals[vals["metric"] == "gpu.time"]["value"].sum(),
                             274400)
            shown = set(self.db.contexts(runtime_frames=rf)["context"])
            self.assertTrue(set(vals["context"]) <= shown)
            self.assertTrue(set(self.db.stats("gpu.time",
                                              runtime_frames=rf)["context"])
                            <= shown)

    def test_inclusive_measured(self):
        """region.time.incl is measured inclusive: no exclusive values in
        views (NaN), its inclusive ones never summed again."""
        m = self.db.metrics()
        flags = dict(zip(m["name"], m["flags"]))
        self.assertEqual(flags["region.time.incl"], 4)
        self.assertEqual(flags["region.time.excl"], 0)
        incl = self.db.view("region.time.incl")
        excl = self.db.view("region.time.excl")
        self.assertTrue(incl["region.time.incl"].isna().all())
        self.assertEqual(list(incl["region.time.incl (inc)"]),
                         list(excl["region.time.excl (inc)"]))
        s = self.db.stats("region.time.incl")
        self.assertEqual(set(s["metric"]), {"region.time.incl (inc)"})

    def test_profiles(self):
        p = self.db.profiles()
        self.assertEqual(list(p.columns), ["profile", "host", "rank", "pid",
                                           "tid", "thread", "flags", "file"])
        self.assertEqual(sorted(p["thread"]), ["host-0", "host-1"])
        self.assertEqual(len(set(p["pid"])), 1)
        self.assertEqual(list(p["rank"]), [-1, -1])

    def test_values_long_form(self):
        v = self.db.values()
        self.assertEqual(list(v.columns),
                         ["context", "profile", "metric", "value"])
        self.assertFalse((v["value"] == 0).any())
        ctx = self.db.contexts()
        kname = dict(zip(ctx["context"], ctx["name"]))
        v["name"] = v["context"].map(kname)
        # Exclusive device time per kernel, summed over both threads.
        k = v[(v["metric"] == "gpu.time") & v["name"].str.startswith("kernel ")]
        per = k.groupby("name")["value"].sum().to_dict()
        self.assertEqual(per, {"kernel stencil": 120000,
                               "kernel reduce": 40000,
                               "kernel init_a": 1000, "kernel init_b": 1400})
        counts = v[(v["metric"] == "gpu.count") &
                   v["name"].str.startswith("kernel ")]
        self.assertEqual(counts.groupby("name")["value"].sum().to_dict(),
                         {"kernel stencil": 40, "kernel reduce": 40,
                          "kernel init_a": 2, "kernel init_b": 2})
        root = v[(v["context"] == 0) & (v["metric"] == "gpu.time (inc)")]
        self.assertEqual(sorted(root["value"]), [137200, 137200])
        bytes_ = v[(v["context"] == 0) & (v["metric"] == "gpu.bytes (inc)")]
        self.assertEqual(list(bytes_["value"]), [29360128, 29360128])

    def test_stats_and_view(self):
        s = self.db.stats("gpu.time")
        r = s[(s["context"] == 0) & (s["metric"] == "gpu.time (inc)")].iloc[0]
        self.assertEqual((r["count"], r["sum"], r["min"], r["mean"], r["max"],
                          r["std"]), (2, 274400, 137200, 137200, 137200, 0))
        view = self.db.view("gpu.time")
        self.assertEqual(view.loc[0, "gpu.time (inc)"], 274400)
        self.assertEqual(view.loc[0, "share"], 1.0)
        setup = view[view["name"] == "setup"].iloc[0]
        self.assertEqual((setup["depth"], setup["gpu.time (inc)"]), (1, 34400))
        text = self.db.view_text("gpu.time", threshold=0.05)
        self.assertIn("the whole: gpu.time 274.400 us", text)

    def test_derive(self):
        db = gpuprof.open(SIMDB)
        db.derive("per_op", "gpu.time / gpu.count")
        s = db.stats("per_op")
        r = s[(s["context"] == 0) & (s["metric"] == "per_op (inc)")].iloc[0]
        self.assertAlmostEqual(r["sum"], 274400 / 126)
        with self.assertRaises(gpuprof.GpuprofError):
            db.derive("bad", "no.such.metric * 2")
        db.close()

    def test_trace(self):
        streams = self.db.trace_streams()
        self.assertEqual(sorted(streams["kind"]),
                         ["deps", "deps", "gpu", "gpu", "ops", "ops",
                          "regions", "regions"])
        gpu = streams[streams["kind"] == "gpu"]
        self.assertEqual(list(gpu["records"]), [63, 63])
        recs = self.db.trace_records(int(gpu.iloc[0]["stream"]))
        self.assertEqual(len(recs), 63)
        self.assertTrue((recs["end_ns"] >= recs["start_ns"]).all())
        self.assertEqual(int((recs["end_ns"] - recs["start_ns"]).sum()), 137200)

    def test_dtypes_agree(self):
        # values(), view() and stats() give float64 values whatever they
        # hold, and the same integer context ids.
        v = self.db.values()
        self.assertEqual(str(v["value"].dtype), "float64")
        self.assertEqual(str(v["context"].dtype), "int64")
        self.assertEqual(str(v["profile"].dtype), "int64")
        view = self.db.view("gpu.count")
        self.assertEqual(str(view["context"].dtype), "int64")
        for col in ("gpu.count", "gpu.count (inc)", "share"):
            self.assertEqual(str(view[col].dtype), "float64", col)
        s = self.db.stats("gpu.count")
        self.assertEqual(str(s["sum"].dtype), "float64")
        # The same numbers either way: the root's inclusive count.
        root = v[(v["context"] == 0) & (v["metric"] == "gpu.count (inc)")]
        self.assertEqual(root["value"].sum(), view.loc[0, "gpu.count (inc)"])
        self.assertEqual(view.loc[0, "gpu.count (inc)"], 126.0)

    def test_metrics_without_values_left_out(self):
        # No PC sampling in this run: no gpu.pc.* metric is listed (nor in
        # stats()), though the profiles' tables name them; all=True lists
        # them, and each listed metric has values.
        names = set(self.db.metrics()["name"])
        every = set(self.db.metrics(all=True)["name"])
        self.assertFalse([n for n in names if n.startswith("gpu.pc.")])
        self.assertTrue([n for n in every if n.startswith("gpu.pc.stall.")])
        self.assertTrue(names < every)
        have = {m.replace(" (inc)", "") for m in self.db.values()["metric"]}
        self.assertEqual(names, have)
        self.assertFalse(self.db.stats()["metric"].str.startswith(
            "gpu.pc.").any())
        # A metric named explicitly is there all the same.
        self.assertTrue(self.db.stats("gpu.pc.stall.barrier").empty)

    def test_errors(self):
        with self.assertRaises(gpuprof.GpuprofError) as e:
            gpuprof.open(os.path.join(SIMDB, "no-such-dir"))
        self.assertIn("no-such-dir", str(e.exception))
        with self.assertRaises(gpuprof.GpuprofError):
            self.db.view("no.such.metric")


PROGRAM = textwrap.dedent("""
    import sys
    import gpuprof
    assert gpuprof.init(output=sys.argv[1], backends="none") is True
    assert gpuprof.init() is False  # already measuring

    @gpuprof.region("inner")
    def inner():
        pass

    @gpuprof.region()
    def named_after_me():
        inner()

    for i in range(3):
        with gpuprof.region("outer"):
            inner()
            inner()
    named_after_me()
    gpuprof.flush()
    gpuprof.stop()
    with gpuprof.region("while stopped"):
        pass
    gpuprof.start()
    try:
        with gpuprof.region("a"):
            gpuprof.region("b").__exit__(None, None, None)
    except gpuprof.GpuprofError as e:
        print("unbalanced:", e.status)
""")


@unittest.skipUnless(GBIN, "GPUPROF_TEST_BIN not set")
class Measurement(unittest.TestCase):
    def test_regions(self):
        with tempfile.TemporaryDirectory() as tmp:
            out, db = os.path.join(tmp, "m"), os.path.join(tmp, "db")
            prog = os.path.join(tmp, "prog.py")
            with open(prog, "w") as f:
                f.write(PROGRAM)
            r = subprocess.run([sys.executable, prog, out], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "unbalanced: 5\n")
            self.assertEqual(len([n for n in os.listdir(out)
                                  if n.endswith(".gpuprof")]), 1)
            subprocess.run([GBIN, "analyze", "-j", "1", "-o", db, out],
                           check=True, capture_output=True)
            with gpuprof.open(db) as d:
                ctx, v = d.contexts(), d.values()
            names = dict(zip(ctx["context"], ctx["name"]))
            parent = dict(zip(ctx["context"], ctx["parent"]))
            visits = v[v["metric"] == "region.visits"]
            got = {}
            for c, val in zip(visits["context"], visits["value"]):
                p = parent[c]
                path = names[c] if p == 0 else names[p] + "/" + names[c]
                got[path] = got.get(path, 0) + val
            self.assertEqual(got, {"outer": 3, "outer/inner": 6,
                                   "named_after_me": 1,
                                   "named_after_me/inner": 1, "a": 1})


class Loading(unittest.TestCase):
    def test_pandas_missing_is_explained(self):
        # An interpreter without pandas: measurement imports and works,
        # gpuprof.open says which interpreter to use instead.
        code = ("import sys\nsys.modules['pandas'] = None\n"
                "import gpuprof\nassert callable(gpuprof.init)\n"
                "try:\n    gpuprof.open('x')\n"
                "except ModuleNotFoundError as e:\n"
                "    print(e.name, '|', e)\n"
                "try:\n    gpuprof.need_pandas()\n"
                "except ImportError as e:\n"
                "    print('need_pandas:', e.name)\n")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("pandas | gpuprof's analysis "
                                            "needs pandas, which this Python "
                                            "(%s, " % sys.executable),
                        r.stdout)
        self.assertIn("Debian's /usr/bin/python3 (apt-get install "
                      "python3-pandas)", r.stdout)
        self.assertIn("'/usr/bin/python3 -m venv --system-site-packages "
                      "DIR'", r.stdout)
        self.assertTrue(r.stdout.endswith("\nneed_pandas: pandas\n"),
                        r.stdout)

    def test_missing_library_is_named(self):
        code = ("import gpuprof, gpuprof._lib as l\n"
                "l._BUILD = '/nonexistent'\n"
                "try:\n    gpuprof.open('x')\n"
                "except gpuprof.GpuprofError as e:\n    print(e)\n")
        env = dict(os.environ, GPUPROF_ANALYSIS_LIBRARY="/nonexistent/lib.so",
                   LD_LIBRARY_PATH="")
        r = subprocess.run([sys.executable, "-c", code], env=env,
                           capture_output=True, text=True)
        self.assertIn("cannot load libgpuprof-analysis.so.0", r.stdout)
        self.assertIn("/nonexistent/lib.so", r.stdout)


if __name__ == "__main__":
    unittest.main()
