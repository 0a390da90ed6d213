#!/usr/bin/env bash
# gpuprof export --chrome end to end: tests/sim/sim_demo (two host threads,
# each with its own stream of the simulated GPU, 62 launches each -- one a
# graph launch of two kernels -- beneath regions, then a sync) runs with
# GPUPROF_TRACE=1; the export must be JSON (python3 json.load) in which
# every track's complete events nest, every device slice has exactly one
# flow pair whose start lies in a launch slice of the same correlation id
# that started no later than the device slice, and the counts are exactly
# the launches made. Then: two directories in one file, a torn trace (a
# note on stderr, the rest exported), a damaged trace header (exit 1, one
# line naming the file), a directory without traces, bad usage.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$B/bin/gpuprof
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -x "$B/tests/sim_demo" ] || [ ! -x "$G" ]; then
  fail "$B/tests/sim_demo and $G are built (run make tests first)"
  exit 1
fi
if ! command -v python3 >/dev/null 2>&1; then
  fail "python3 is installed (tools/install-deps.sh check)"
  exit 1
fi
for r in a b; do
  if ! GPUPROF_OUTPUT=$tmp/$r GPUPROF_TRACE=1 "$B/tests/sim_demo" >"$tmp/run.log" 2>&1; then
    fail "sim_demo runs"; cat "$tmp/run.log"; exit 1
  fi
done

# check.py FILE PROCESSES: the structural checks; prints what it found.
cat >"$tmp/check.py" <<'PY'
import decimal, json, sys
path, nproc = sys.argv[1], int(sys.argv[2])
d = json.load(open(path, encoding="utf-8"), parse_float=decimal.Decimal)
assert "displayTimeUnit" not in d, "no displayTimeUnit (older viewers scale by it)"
ev = d["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert len(procs) == nproc, "processes %d" % len(procs)
tracks = {}
for e in ev:
    if e["ph"] == "X":
        assert e["dur"] >= 0 and e["ts"] >= 0
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
# Nesting: on each track, sorted by start (longest first), every event lies
# inside the enclosing one or starts after it ended.
for k, xs in tracks.items():
    assert k in names, "track %r has no name" % (k,)
    xs.sort(key=lambda e: (e["ts"], -e["dur"]))
    stack = []
    for e in xs:
        while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]:
            stack.pop()
        if stack:
            assert e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"], \
                "overlap on %s: %r / %r" % (names[k], stack[-1], e)
        stack.append(e)
# GPU operations are category "gpu" on both sides: the call on a CPU
# track, the device work on a GPU track (pseudo tids from 0x40000000).
gpu = [e for e in ev if e["ph"] == "X" and e["cat"] == "gpu" and e["tid"] >= 0x40000000]
api = [e for e in ev if e["ph"] == "X" and e["cat"] == "gpu" and e["tid"] < 0x40000000]
launches = [e for e in api if e["name"] != "sync"]
starts = {e["id"]: e for e in ev if e["ph"] == "s"}
ends = {e["id"]: e for e in ev if e["ph"] == "f"}
assert len(starts) == sum(e["ph"] == "s" for e in ev), "flow ids unique"
assert set(starts) == set(ends), "every flow has both ends"
def inside(x, p, tid, ts):
    return x["pid"] == p and x["tid"] == tid and (x["ts"] <= ts < x["ts"] + x["dur"] or x["ts"] == ts)
flows_of = {}
for i, f in ends.items():
    s = starts[i]
    assert f["bp"] == s["bp"] == "e" and f["cat"] == s["cat"] == "gpu"
    dev = [g for g in gpu if inside(g, f["pid"], f["tid"], f["ts"])]
    lau = [a for a in api if inside(a, s["pid"], s["tid"], s["ts"])]
    assert len(dev) == 1 and len(lau) == 1, "flow %d binds to one slice each" % i
    assert dev[0]["args"]["corr"] == lau[0]["args"]["corr"], "flow joins one id"
    assert dev[0]["ts"] >= lau[0]["ts"], "device starts after its launch"
    assert (s["ts"], f["ts"]) == (lau[0]["ts"], dev[0]["ts"]), "flow ends at their slices' starts"
    assert s["ts"] <= f["ts"]
    flows_of.setdefault(id(dev[0]), []).append(i)
assert all(len(flows_of.get(id(g), [])) == 1 for g in gpu), "one flow per device slice"
assert all(g["args"]["corr"] in {a["args"]["corr"] for a in launches} for g in gpu)
kern = sum(g["name"] in ("stencil", "reduce") for g in gpu)
gtracks = sorted(set(names[(g["pid"], g["tid"])] for g in gpu))
print("processes=%d tracks=%d gpu_tracks=%s device=%d launches=%d syncs=%d flows=%d kernels=%d regions=%d"
      % (len(procs), len(tracks), ",".join(gtracks), len(gpu), len(launches),
         len(api) - len(launches), len(ends), kern,
         sum(e["cat"] == "region" for e in ev if e["ph"] == "X")))
PY

if "$G" export --chrome -o "$tmp/a.json" "$tmp/a" 2>"$tmp/err" && [ ! -s "$tmp/err" ]; then
  pass "export --chrome of a sim_demo run exits 0, nothing on stderr"
else
  fail "export --chrome of a sim_demo run"; cat "$tmp/err"
fi
want="processes=1 tracks=4 gpu_tracks=GPU 0 stream 0,GPU 0 stream 1 device=126 launches=124 syncs=2 flows=126 kernels=80 regions=4"
got=$(python3 "$tmp/check.py" "$tmp/a.json" 1 2>&1)
if [ "$got" = "$want" ]; then
  pass "JSON parses; tracks nest; one flow per device slice from its launch; counts exact"
else
  fail "JSON checks: $got"
fi
if grep -q '"name":"kernel launch: stencil"' "$tmp/a.json" &&
   grep -q '"name":"host-0 (tid [0-9]*)"' "$tmp/a.json" &&
   grep -q '"cat":"gpu","name":"init_a | init_b"' "$tmp/a.json"; then
  pass "launches, threads and kernels are named from the profile"
else
  fail "launches, threads and kernels are named from the profile"
fi
# Two directories: two processes in one file, on one time line.
got=$("$G" export --chrome "$tmp/a" "$tmp/b" >"$tmp/ab.json" 2>"$tmp/err" &&
      python3 "$tmp/check.py" "$tmp/ab.json" 2 2>&1)
if [ "$got" = "processes=2 tracks=8 gpu_tracks=GPU 0 stream 0,GPU 0 stream 1 device=252 launches=248 syncs=4 flows=252 kernels=160 regions=8" ]; then
  pass "two directories: two processes in one file (stdout)"
else
  fail "two directories: $got $(cat "$tmp/err")"
fi
# A torn last chunk: said on stderr; the rest is exported.
mkdir -p "$tmp/torn"
cp "$tmp"/a/*.gpuprof "$tmp/torn/"
tr=$(ls "$tmp"/a/*.gptrace)
head -c $(($(stat -c %s "$tr") - 10)) "$tr" >"$tmp/torn/$(basename "$tr")"
if "$G" export --chrome -o "$tmp/t.json" "$tmp/torn" 2>"$tmp/err" &&
   [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "gptrace: the last [0-9]* bytes are ignored (torn chunk" "$tmp/err" &&
   python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/t.json"; then
  pass "a torn last chunk is reported on stderr; the rest is exported"
else
  fail "a torn last chunk: $(cat "$tmp/err")"
fi
# A damaged trace header: exit 1, one line naming the file, no output file.
mkdir -p "$tmp/bad"
cp "$tmp"/a/*.gpuprof "$tr" "$tmp/bad/"
bt=$tmp/bad/$(basename "$tr")
printf 'X' | dd of="$bt" bs=1 seek=24 conv=notrunc 2>/dev/null # reserved, 0: always a change
"$G" export --chrome -o "$tmp/bad.json" "$tmp/bad" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF "gpuprof: $bt: trace header damaged" "$tmp/err" &&
   [ ! -e "$tmp/bad.json" ] && ! ls -A "$tmp" | grep -q '^\.bad\.json\.'; then
  pass "a damaged trace: exit 1, one line naming the file, no output"
else
  fail "a damaged trace (exit $rc): $(cat "$tmp/err")"
fi
mkdir -p "$tmp/empty"
"$G" export --chrome "$tmp/empty" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" = 1 ] && grep -qF "gpuprof: $tmp/empty: no traces" "$tmp/err"; then
  pass "a directory without traces: exit 1 naming it"
else
  fail "a directory without traces (exit $rc): $(cat "$tmp/err")"
fi
"$G" export --chrome >/dev/null 2>&1
rc=$?
if [ "$rc" = 2 ]; then pass "export --chrome without a directory: usage, exit 2"; else fail "usage (exit $rc)"; fi
exit $((fails > 0))
