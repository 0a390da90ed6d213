#!/usr/bin/env bash
# Exports for Python, end to end on tests/sim/sim_demo's database (2
# streams x 137,200 ns of device work, 126 operations): the Hatchet literal
# JSON parses, holds every context once (ids 0..n-1, parents first), and
# for every additive metric each node's inclusive value is its exclusive
# value plus its children's inclusive ones, the root's being the whole; the
# CSV table parses and its exclusive values re-sum to the whole. Both carry
# per metric the min, mean and max over the profiles with a value: the
# table's rows give them independently (their non-zero values), and the two
# files agree. -o FILE writes FILE only when the export succeeds (nothing
# half written, no temporary left); options that mean nothing for an export
# are refused naming them. Hatchet and pandas are loaded when they are
# installed (pip; not Debian packages): python3's json and csv check the
# rest, and the JSON's shape is checked against what Hatchet's literal
# reader does with it (GraphFrame.from_literal, hatchet/readers/
# literal_reader.py): it makes one node per distinct frame anywhere in the
# tree (so every frame must be unique, or two contexts become one node with
# the first one's metrics), takes the metric columns from the root's
# "metrics" ("(inc)" in a name: inclusive), and gf.tree() without a
# metric_column reads the column "time" (GraphFrame's default_metric), so
# a plain gf.tree() needs a field "time" on every node. `--metric` keeps
# the contexts where that metric has a value. region.time.incl, measured
# inclusive, is never summed again: on the nested regions of
# examples/regions its "(inc)" equals region.time.excl's everywhere.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
G=$B/bin/gpuprof
if [ ! -x "$B/tests/sim_demo" ] || [ ! -x "$G" ]; then
  fail "$B/tests/sim_demo and $G are built (run make tests first)"
  exit 1
fi
if ! command -v python3 >/dev/null 2>&1; then
  fail "python3 is installed (tools/install-deps.sh check)"; exit 1
fi
GPUPROF_OUTPUT=$tmp/out "$B/tests/sim_demo" >/dev/null 2>&1 || { fail "sim_demo runs"; exit 1; }
"$G" analyze -o "$tmp/db" "$tmp/out" >/dev/null 2>&1 || { fail "analyze"; exit 1; }
"$G" export --hatchet "$tmp/db" >"$tmp/h.json" 2>"$tmp/err" &&
  pass "export --hatchet" || fail "export --hatchet: $(cat "$tmp/err")"
python3 - "$tmp/h.json" <<'PY' && pass "the Hatchet JSON: every context once, inclusive = exclusive + children, whole 274400 ns / 126 ops" || fail "the Hatchet JSON"
import json, sys
roots = json.load(open(sys.argv[1]))
assert isinstance(roots, list) and len(roots) == 1, "one root"
ids = []
additive = ["gpu.time", "gpu.count", "gpu.bytes", "region.visits"]
frames = set()
columns = set(roots[0]["metrics"])
assert "time" in columns and "time (inc)" in columns, "gf.tree()'s default column"
def walk(n, parent):
    f = n["frame"]
    assert isinstance(f["name"], str) and isinstance(f["type"], str)
    assert set(f) == {"name", "type", "callpath"}, "frames: name, type, callpath"
    key = tuple(sorted(f.items()))
    assert key not in frames, ("Hatchet would make these one node", f)
    frames.add(key)
    assert set(n["metrics"]) == columns, "every column on every node"
    assert n["metrics"]["time"] == n["metrics"]["gpu.time"]
    assert not any("(min)" in m or "(mean)" in m or "(max)" in m for m in n["metrics"]), "no statistics by default"
    ids.append(len(ids))
    for k in n["children"]:
        walk(k, 0)
    for m in additive:
        inc = n["metrics"][m + " (inc)"]
        want = n["metrics"][m] + sum(k["metrics"][m + " (inc)"] for k in n["children"])
        assert inc == want, (f["name"], m, inc, want)
walk(roots[0], -1)
assert sorted(ids) == list(range(len(ids))), "every context once"
r = roots[0]["metrics"]
assert r["gpu.time (inc)"] == 274400, r["gpu.time (inc)"]
assert r["gpu.count (inc)"] == 126, r["gpu.count (inc)"]
try:
    import hatchet
    gf = hatchet.GraphFrame.from_literal(roots)
    assert len(gf.graph) == len(ids)
    print("hatchet loaded it")
except ImportError:
    print("hatchet is not installed: its loader was not run")
PY
"$G" export --table "$tmp/db" >"$tmp/t.csv" 2>"$tmp/err" &&
  pass "export --table" || fail "export --table: $(cat "$tmp/err")"
python3 - "$tmp/t.csv" <<'PY' && pass "the CSV table re-sums to the whole" || fail "the CSV table re-sums to the whole"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert rows, "rows"
assert sum(float(r["gpu.time"]) for r in rows) == 274400
assert sum(float(r["gpu.count"]) for r in rows) == 126
assert {r["thread"] for r in rows} >= {"host-0", "host-1"}
root = [r for r in rows if r["context"] == "0"]
assert sum(float(r["gpu.time (inc)"]) for r in root) == 274400
PY
"$G" export --hatchet "$tmp/nope" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "nope" "$tmp/err" && pass "export --hatchet: a missing database is named" ||
  fail "export --hatchet: a missing database is named"

# Statistics over profiles: the table's own rows give each context's
# non-zero values of a metric; min, mean and max of those are the columns
# and the Hatchet fields (a derived metric too).
"$G" export --hatchet --stats --derive 'per_op=gpu.time/gpu.count' "$tmp/db" >"$tmp/hd.json" 2>"$tmp/err" &&
  "$G" export --table --derive 'per_op=gpu.time/gpu.count' "$tmp/db" >"$tmp/td.csv" 2>>"$tmp/err" ||
  fail "exports with --derive: $(cat "$tmp/err")"
python3 - "$tmp/hd.json" "$tmp/td.csv" <<'PY' && pass "min/mean/max over profiles: the table's rows, the table's columns and the Hatchet fields agree" || fail "min/mean/max over profiles"
import csv, json, sys
def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1)
# Hatchet nodes carry no context id: both sides are keyed by the path of
# names from the root.
nodes = {}
def walk(n, path):
    path = path + (n["frame"]["name"],)
    assert path not in nodes, path
    nodes[path] = n["metrics"]
    for k in n["children"]:
        walk(k, path)
walk(json.load(open(sys.argv[1]))[0], ())
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
names = {int(r["context"]): (r["parent"], r["name"]) for r in rows}
def cpath(c):
    p, n = names[c]
    return (cpath(int(p)) if p else ()) + (n,)
nodes = {c: nodes[cpath(c)] for c in names}
nodes_all = nodes
metrics = ["gpu.time", "gpu.count", "region.visits", "per_op"]
for m in metrics:
    for f in ["", " (inc)", " (min)", " (mean)", " (max)", " (min) (inc)",
              " (mean) (inc)", " (max) (inc)"]:
        assert m + f in rows[0], "column " + m + f
by = {}
for r in rows:
    by.setdefault(int(r["context"]), []).append(r)
checked = 0
for c, rs in by.items():
    h = nodes[c]
    for m in metrics:
        for v, suf in (("", ""), (" (inc)", " (inc)")):
            vals = [float(r[m + v]) for r in rs if float(r[m + v]) != 0]
            got = [h[m + " (" + s + ")" + suf] for s in ("min", "mean", "max")]
            want = [min(vals), sum(vals) / len(vals), max(vals)] if vals else [0, 0, 0]
            assert all(close(a, b) for a, b in zip(got, want)), (c, m, suf, got, want)
            for r in rs:  # every row of the context repeats them
                col = [float(r[m + " (" + s + ")" + suf]) for s in ("min", "mean", "max")]
                assert all(close(a, b) for a, b in zip(col, got)), (c, m, col, got)
            checked += bool(vals)
assert checked > 50, checked
# Rows for exactly the contexts with a measured value (derived ones add none).
assert set(by) == {c for c, h in nodes_all.items() if any(
    v for k, v in h.items() if k.endswith(" (inc)") and "(" not in k[:-6]
    and not k.startswith("per_op"))}
PY

# -o FILE: the same bytes as stdout; no temporary left beside it.
for x in hatchet table folded; do
  "$G" export --$x "$tmp/db" >"$tmp/stdout.$x" 2>/dev/null
  if "$G" export --$x -o "$tmp/out.$x" "$tmp/db" >"$tmp/o" 2>"$tmp/err" && [ ! -s "$tmp/o" ] &&
     cmp -s "$tmp/stdout.$x" "$tmp/out.$x" && ! ls -A "$tmp" | grep -q "^\.out\.$x\."; then
    pass "export --$x -o FILE: the bytes of stdout, nothing else left"
  else
    fail "export --$x -o FILE: $(cat "$tmp/err")"
  fi
done
# A failing export leaves FILE as it was, and no temporary.
echo old >"$tmp/keep.csv"
"$G" export --table -o "$tmp/keep.csv" --derive 'x=no.such' "$tmp/db" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 1 ] && grep -q "no metric named 'no.such'" "$tmp/err" && [ "$(cat "$tmp/keep.csv")" = old ] &&
   ! ls -A "$tmp" | grep -q '^\.keep\.csv\.'; then
  pass "export --table -o FILE that fails: FILE unchanged, no temporary"
else
  fail "export --table -o FILE that fails (exit $rc): $(cat "$tmp/err")"
fi
"$G" export --hatchet -o "$tmp/no/such/dir/h.json" "$tmp/db" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "$tmp/no/such/dir/h.json" "$tmp/err" &&
  pass "export -o into a missing directory: exit 1 naming the file" ||
  fail "export -o into a missing directory: $(cat "$tmp/err")"
# The written file has the mode a plain open would give (not mkstemp's 0600).
want=$(umask | sed 's/^0*//'); want=$(printf '%o' $((0666 & ~8#${want:-0})))
got=$(stat -c %a "$tmp/out.table")
[ "$got" = "$want" ] && pass "export -o FILE: mode $got (0666 less the umask)" ||
  fail "export -o FILE: mode $got, want $want"

# Options that mean nothing where they are given: exit 2, named (and the
# line pointing to the usage).
refuse() { # what, expected text, command...
  local what=$1 text=$2
  shift 2
  "$G" "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  if [ $rc = 2 ] && head -n 1 "$tmp/err" | grep -qF -- "$text" && [ "$(wc -l <"$tmp/err")" = 2 ] &&
     sed -n 2p "$tmp/err" | grep -qx "try 'gpuprof [a-z]* --help'"; then
    pass "$what: exit 2, '$(head -n 1 "$tmp/err")'"
  else
    fail "$what (exit $rc): $(cat "$tmp/err")"
  fi
}
if "$G" export --hatchet "$tmp/db" --metric gpu.time >"$tmp/hm.json" 2>"$tmp/err" &&
   python3 - "$tmp/hm.json" "$tmp/h.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))[0]
assert sorted(r["metrics"]) == ["gpu.time", "gpu.time (inc)", "time", "time (inc)"], r["metrics"]
def nodes(n):
    yield n
    for k in n["children"]:
        yield from nodes(k)
kept = list(nodes(r))
assert all(n["metrics"]["gpu.time (inc)"] > 0 for n in kept), "contexts without gpu.time"
full = list(nodes(json.load(open(sys.argv[2]))[0]))
want = [n for n in full if n["metrics"]["gpu.time (inc)"] > 0]
assert len(kept) == len(want) < len(full), (len(kept), len(want), len(full))
PY
  pass "export --hatchet --metric gpu.time: that metric (and \"time\") alone, only the contexts with gpu.time (option after the operand)"
else
  fail "export --hatchet --metric gpu.time: $(cat "$tmp/err")"
fi
# region.time.incl (nested regions): inclusive as measured, never re-summed.
if [ -x "$B/examples/regions" ] &&
   GPUPROF_OUTPUT=$tmp/reg "$B/examples/regions" >/dev/null 2>&1 &&
   "$G" analyze -j 1 -o "$tmp/regdb" "$tmp/reg" >/dev/null 2>&1 &&
   "$G" export --hatchet "$tmp/regdb" >"$tmp/reg.json" 2>"$tmp/err" &&
   python3 - "$tmp/reg.json" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))[0]
assert "region.time.incl" not in r["metrics"], "no exclusive field: measured inclusive"
# Each value is converted from clock ticks to ns on its own, so the sum of
# a subtree's exclusive values may differ from the measured inclusive one by
# less than 1 ns per node of the subtree; re-summing inclusive values would
# be off by whole visits.
def walk(n, depth):
    m = n["metrics"]
    kids = [walk(k, depth + 1) for k in n["children"]]
    size = 1 + sum(k[1] for k in kids)
    diff = abs(m["region.time.incl (inc)"] - m["region.time.excl (inc)"])
    assert diff < size, (n["frame"]["name"], m, size)
    return max([depth] + [k[0] for k in kids]), size
assert walk(r, 0)[0] >= 2, "nested regions"
assert r["metrics"]["time (inc)"] == r["metrics"]["region.time.excl (inc)"]
PY
  pass "export --hatchet of nested regions: region.time.incl (inc) = region.time.excl (inc) at every node to the conversion's rounding (never summed again), no exclusive field"
else
  fail "export --hatchet region.time.incl: $(cat "$tmp/err")"
fi
"$G" export --hatchet --metric nope "$tmp/db" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && [ "$(cat "$tmp/err")" = "gpuprof: no metric nope" ] &&
  pass "export --hatchet --metric nope: exit 1 naming it" || fail "export --hatchet --metric nope: $(cat "$tmp/err")"
refuse "export --table --metric" "export --table writes every metric: --metric has no meaning here" \
  export --table --metric gpu.time "$tmp/db"
refuse "export --folded with two --metric" "export --folded writes one metric" \
  export --folded --metric gpu.time --metric gpu.count "$tmp/db"
refuse "export --table --depth" "export --table: --depth is an option of report views" \
  export --table --depth 2 "$tmp/db"
refuse "export --folded --trace" "export --folded: --trace is an option of report views" \
  export --folded --trace "$tmp/db"
refuse "report --trace --metric" "report --trace lists trace.db's streams: --metric has no meaning there" \
  report --trace --metric gpu.time "$tmp/db"
refuse "report --context with two --metric" "report --context shows one metric" \
  report --context 1 --metric gpu.time --metric gpu.count "$tmp/db"
refuse "report -o" "report: -o is an option of export" report -o "$tmp/r.txt" "$tmp/db"

# pandas, where it is installed.
python3 - "$tmp/t.csv" <<'PY'
import sys
try:
    import pandas as pd
except ImportError:
    print("pandas is not installed: its reader was not run")
    sys.exit(0)
df = pd.read_csv(sys.argv[1])
assert df["gpu.time"].sum() == 274400
top = df[df["context"] == 0]
assert top["gpu.time (inc)"].sum() == 274400
by = df.groupby("context")["gpu.time"]
assert (by.max() == df.groupby("context")["gpu.time (max)"].first()).all()
print("PASS pandas.read_csv reads the table: sums and per-context maxima")
PY
[ "$fails" -eq 0 ]
