#!/usr/bin/env bash
# Exports for Python, end to end on tests/sim/sim_demo's database (2
# streams x 137,200 ns of device work, 126 operations): the Hatchet literal
# JSON parses, holds every context once (ids 0..n-1, parents first), and
# for every additive metric each node's inclusive value is its exclusive
# value plus its children's inclusive ones, the root's being the whole; the
# CSV table parses and its exclusive values re-sum to the whole. Hatchet
# itself is loaded when it is installed (pip; not a Debian package).
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
def walk(n, parent):
    f = n["frame"]
    assert isinstance(f["name"], str) and isinstance(f["type"], str)
    c = f["context"]
    assert c > parent, "parents first"
    ids.append(c)
    for k in n["children"]:
        walk(k, c)
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
[ "$fails" -eq 0 ]
