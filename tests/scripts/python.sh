#!/usr/bin/env bash
# The Python package (python/gpuprof): its unittest module
# (python/tests/test_gpuprof.py: exact values on the database of
# tests/sim/sim_demo, regions measured from Python, dtypes, metrics without
# values left out, the error without pandas), `pip install` from the
# checkout (offline, --no-build-isolation) into a venv made with
# --system-site-packages, the installed copy finding its library without
# GPUPROF_ANALYSIS_LIBRARY (where the install recorded it, or beside the
# gpuprof command on PATH), regions under `gpuprof run` (init joins the
# preloaded measurement), and examples/python/kernels.py's exact table.
# Runs Debian's /usr/bin/python3 (where python3-pandas installs), else the
# python3 on PATH; SKIP when none has pandas.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$PWD/$B/bin/gpuprof
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
PY=
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import pandas' >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "SKIP no python3 with pandas (Debian: python3-pandas)"
  exit 0
fi
for x in "$G" "$B/tests/sim_demo"; do
  [ -x "$x" ] || { fail "$x is built (make tests)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

GPUPROF_OUTPUT=$tmp/sim GPUPROF_BACKENDS=sim GPUPROF_TRACE=1 "$B/tests/sim_demo" >/dev/null 2>&1 &&
  "$G" analyze -j 1 -o "$tmp/simdb" "$tmp/sim" >/dev/null 2>&1 ||
  { fail "sim_demo measured and analysed"; exit 1; }

if GPUPROF_TEST_SIMDB=$tmp/simdb GPUPROF_TEST_BIN=$G PYTHONPATH=$PWD/python \
   "$PY" python/tests/test_gpuprof.py -v >"$tmp/ut.log" 2>&1; then
  pass "python/tests/test_gpuprof.py ($(grep -c ' \.\.\. ok$' "$tmp/ut.log") tests, $PY)"
else
  fail "python/tests/test_gpuprof.py"; cat "$tmp/ut.log"
fi

# pip from the checkout, offline, into a venv that sees Debian's pandas
# (--system-site-packages); the installed copy finds the library without
# GPUPROF_ANALYSIS_LIBRARY: the install recorded build/lib of the checkout
# it came from. The checkout is a copy ($tmp/tree, its build a link to
# ours), so that pip's build files stay out of it.
anlib=$(realpath "$B/lib/libgpuprof-analysis.so.0")
mkdir -p "$tmp/tree" && cp -r python "$tmp/tree/python" && ln -s "$PWD/$B" "$tmp/tree/build" &&
  rm -rf "$tmp/tree/python/build" "$tmp/tree/python"/*.egg-info
# Where the installed package loads the analysis library from, run from
# $tmp with nothing pointing at it; "True N PATH" (from the install, N
# profiles of the database, the library's file).
loaded() { # PYTHON [PYTHONPATH]
  (cd "$tmp" && env -u GPUPROF_ANALYSIS_LIBRARY LD_LIBRARY_PATH= PYTHONPATH="${2:-}" "$1" -c '
import os, sys, gpuprof, gpuprof._lib as l
db = gpuprof.open(sys.argv[1])
print(gpuprof.__file__.startswith(sys.argv[2]), len(db.profiles()),
      os.path.realpath(l.analysis_lib()._name))' "$tmp/simdb" "$3")
}
if ! "$PY" -m pip --version >/dev/null 2>&1; then
  echo "SKIP pip install (no pip for $PY; Debian: python3-pip)"
elif ! "$PY" -m venv --without-pip --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1; then
  echo "SKIP pip install into a venv ($PY -m venv: $(tail -n 1 "$tmp/venv.log"))"
else
  if PKG_CONFIG_LIBDIR=/nonexistent "$tmp/venv/bin/python" -m pip install --no-build-isolation --no-deps --no-index \
       "$tmp/tree/python" >"$tmp/pip.log" 2>&1 &&
     out=$(loaded "$tmp/venv/bin/python" "" "$tmp/venv") && [ "$out" = "True 2 $anlib" ] &&
     grep -qF "LIBRARY_DIRS = ['$(dirname "$anlib")']" "$tmp"/venv/lib/python3*/site-packages/gpuprof/_where.py; then
    pass "pip install ./python into a venv (--system-site-packages): it finds $anlib without GPUPROF_ANALYSIS_LIBRARY"
  else
    fail "pip install ./python into a venv: ${out:-}"; tail -n 5 "$tmp/pip.log"
  fi
  # Installed from a copy without a build tree beside it: nothing is
  # recorded, and the library beside the gpuprof command on PATH is found.
  cp -r "$tmp/tree/python" "$tmp/bare" && rm -rf "$tmp/bare/build" "$tmp/bare"/*.egg-info
  if PKG_CONFIG_LIBDIR=/nonexistent "$PY" -m pip install --no-build-isolation --no-deps --no-index --target "$tmp/site" \
       "$tmp/bare" >"$tmp/pip2.log" 2>&1 &&
     out=$(PATH=$(dirname "$G"):$PATH loaded "$PY" "$tmp/site" "$tmp/site") && [ "$out" = "True 2 $anlib" ]; then
    pass "an install that recorded nothing finds the library beside the gpuprof command on PATH"
  else
    fail "an install that recorded nothing, gpuprof on PATH: ${out:-}"; tail -n 5 "$tmp/pip2.log"
  fi
fi

# Under `gpuprof run` the package's regions go to the preloaded library
# (init() says it was already measuring).
PYTHONPATH=$PWD/python "$G" run -o "$tmp/pr" "$PY" -c '
import gpuprof
print(gpuprof.init())
with gpuprof.region("py-region"):
    pass' >"$tmp/pr.out" 2>&1
if [ "$(cat "$tmp/pr.out")" = False ] &&
   "$G" report "$tmp/pr" | grep -qE '^ +1 +[0-9.]+ [mun]?s +[0-9.]+ [mun]?s +100.0% +1 +1 +1.00  py-region$'; then
  pass "under gpuprof run: regions go to the preloaded library (init() is False)"
else
  fail "under gpuprof run: $(cat "$tmp/pr.out")"; "$G" report "$tmp/pr"
fi

# A setting the program asks for that the run's measurement does not have
# is said (GPUPROF_LOG=warn), and the region still goes to the run's
# directory, not to the one asked for.
PYTHONPATH=$PWD/python "$G" run --log warn --backends none -o "$tmp/pj" "$PY" -c '
import sys, gpuprof
print(gpuprof.init(output=sys.argv[1]))
with gpuprof.region("joined"):
    pass' "$tmp/elsewhere" >"$tmp/pj.out" 2>"$tmp/pj.err"
want="gpuprof: gpuprof_init: joined a running measurement: GPUPROF_OUTPUT=$tmp/elsewhere cannot apply any more (in use: $(realpath "$tmp/pj"))"
if [ "$(cat "$tmp/pj.out")" = False ] && [ "$(cat "$tmp/pj.err")" = "$want" ] && [ ! -e "$tmp/elsewhere" ] &&
   "$G" report "$tmp/pj" | grep -qE ' joined$'; then
  pass "under gpuprof run: init(output=...) joins, says the output cannot apply, the region is in the run's directory"
else
  fail "under gpuprof run, init(output=...): $(cat "$tmp/pj.out" "$tmp/pj.err")"
fi

# The example post-processing script: its exact table.
cat >"$tmp/want" <<'T'
kernel                   launches      device ns   share      mean ns  launched at
stencil                        40         120000   73.9%       3000.0  sim_demo.c:39
reduce                         40          40000   24.6%       1000.0  sim_demo.c:40
init_b                          2           1400    0.9%        700.0  sim_demo.c:33
init_a                          2           1000    0.6%        500.0  sim_demo.c:33
T
if PYTHONPATH=$PWD/python "$PY" examples/python/kernels.py "$tmp/simdb" --csv "$tmp/k.csv" >"$tmp/ex.out" 2>&1 &&
   diff -u "$tmp/want" "$tmp/ex.out" && [ "$(sed -n 2p "$tmp/k.csv")" = "stencil,40,120000,sim_demo.c:39,0.7389162561576355,3000.0" ]; then
  pass "examples/python/kernels.py: the exact kernel table and its CSV"
else
  fail "examples/python/kernels.py"; cat "$tmp/ex.out"
fi
# GPU calling contexts (the H100 fixture, its cubin listed by the fixture's
# nvdisasm stand-in): kinds, loops' lines, and the kernel's exclusive
# values beneath it adding up to its inclusive one.
F=$PWD/tests/fixtures/gpu-sm90
if "$B/tests/gen_pc_measure" "$F" "$tmp/pc" 1 _Z5chasePKiPii=1,4096,256,22,0 >/dev/null 2>&1 &&
   GPUPROF_NVDISASM=$F/nvdisasm "$G" analyze -o "$tmp/pcdb" "$tmp/pc" >/dev/null 2>&1 &&
   out=$(PYTHONPATH=$PWD/python "$PY" -c '
import sys, gpuprof
db = gpuprof.open(sys.argv[1])
c = db.contexts()
fib = c[c.kind == "gpu function"].name.str.startswith("fib(int) [recursive]").sum()
loop = c[(c.kind == "loop") & (c.line == 12)].file.str.endswith("kernels.cu").sum()
k = int(c[c.name.str.startswith("kernel calls(")].context.iloc[0])
kids = {}
for r in c.itertuples():
    kids.setdefault(r.parent, []).append(r.context)
under, todo = set(), [k]
while todo:
    x = todo.pop(); under.add(x); todo += kids.get(x, [])
v = db.values()
s = v[(v.metric == "gpu.pc.samples") & v.context.isin(under)].value.sum()
inc = v[(v.metric == "gpu.pc.samples (inc)") & (v.context == k)].value.sum()
ap = v[(v.metric == "gpu.pc.apportioned_samples (inc)") & (v.context == k)].value.sum()
d = db.devices()
sms = d[(d.api == "cuda") & (d.attribute == "sm_count")].value.iloc[0]
name = d[d.attribute == "name"].value.iloc[0]
print(fib, loop, int(s), int(inc), int(ap), sms, name)' "$tmp/pcdb" 2>&1) &&
   [ "$out" = "1 1 1007392 1007392 18178 132 NVIDIA H100 80GB HBM3" ]; then
  pass "python: GPU calling contexts (gpu function, loop), the kernel's exact sum, the apportioned samples, the device"
else
  fail "python: GPU calling contexts: ${out:-not analyzed}"
fi
[ $fails -eq 0 ]
