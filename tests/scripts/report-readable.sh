#!/usr/bin/env bash
# Reports and exports a person (and the tools people use) can read: options
# after operands (`gpuprof analyze DIR -o DB`), a database view's default
# metric is one with data, column headers, `export --table --long`, Hatchet
# frames of two runs of an unmodified OpenCL program that match (name and
# type; kernel names without the binary, which is a field of its own).
# `gpuprof report DIR` of a cold-cache OpenCL run: lines of at most 200
# bytes, full column headers, a threshold (1% by default: what it left
# out is said; --threshold 0 shows all), no runtime frames; kernel names
# without the binary's content hash (which differs between a cold and a
# warm PoCL cache) in the database's views, folded stacks and tables, so
# the flame-graph stacks of the two runs match.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$PWD/$B/bin/gpuprof
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for x in "$G" "$B/examples/regions" "$B/tests/sim_demo"; do
  [ -x "$x" ] || { fail "$x is built (make all tests)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A run without GPU work: the regions example (4 threads).
GPUPROF_OUTPUT=$tmp/reg "$B/examples/regions" >/dev/null 2>&1
if (cd "$tmp" && "$G" analyze reg -o regdb -j 1 >/dev/null 2>"$tmp/err") &&
   [ -f "$tmp/regdb/meta.db" ] && [ ! -e "$tmp/reg-database" ] && [ ! -e "$tmp/-o" ]; then
  pass "analyze DIR -o DB -j 1: options after the operand"
else
  fail "analyze DIR -o DB: $(cat "$tmp/err")"; ls "$tmp"
fi
"$G" report "$tmp/regdb" >"$tmp/r1" 2>"$tmp/err"
if head -n 1 "$tmp/r1" | grep -q '^top-down view over 4 profiles, by inclusive region.time.excl; the whole: region.time.excl [0-9.]* ms;' &&
   [ "$(sed -n 2p "$tmp/r1")" = "                     region.time.excl" ] &&
   [ "$(sed -n 3p "$tmp/r1")" = "     inclusive   share      exclusive  context" ]; then
  pass "default metric of a run without GPU work: region.time.excl, with column headers"
else
  fail "default metric / headers"; head -n 4 "$tmp/r1"
fi
"$G" report "$tmp/regdb" --metric region.visits --view flat --threshold 0 >"$tmp/r2" 2>"$tmp/err"
if head -n 1 "$tmp/r2" | grep -q '^flat view over 4 profiles, by inclusive region.visits;' &&
   [ "$(sed -n 3p "$tmp/r2")" = "     inclusive   share      exclusive  procedure" ]; then
  pass "report DB --metric M --view flat: options after the operand"
else
  fail "report DB --metric ... after the operand: $(cat "$tmp/err")"; head -n 3 "$tmp/r2"
fi
"$G" report --importance --view flat "$tmp/regdb" >"$tmp/r3" 2>&1
if [ "$(sed -n 2p "$tmp/r3")" = "                     region.time.excl                        cpu_importance                    gpu_api_importance" ] &&
   [ "$(sed -n 3p "$tmp/r3")" = "     inclusive   share      exclusive      inclusive              exclusive      inclusive              exclusive  procedure" ]; then
  pass "--importance --view flat: every column named"
else
  fail "--importance --view flat headers"; head -n 3 "$tmp/r3"
fi

# export --table --long on sim_demo's database.
GPUPROF_OUTPUT=$tmp/sim GPUPROF_BACKENDS=sim "$B/tests/sim_demo" >/dev/null 2>&1 &&
  "$G" analyze -j 1 -o "$tmp/simdb" "$tmp/sim" >/dev/null 2>&1
"$G" export --table "$tmp/simdb" --long -o "$tmp/long.csv" 2>"$tmp/err"
if [ "$(head -n 1 "$tmp/long.csv")" = "context,profile,metric,value" ] &&
   [ "$(awk -F, '$1 == 0 && $3 == "gpu.time (inc)" { s += $4 } END { print s }' "$tmp/long.csv")" = 274400 ] &&
   [ "$(awk -F, '$3 == "gpu.time" { s += $4 } END { print s }' "$tmp/long.csv")" = 274400 ] &&
   [ "$(awk -F, 'NR > 1 && $4 == 0' "$tmp/long.csv" | wc -l)" = 0 ]; then
  pass "export --table --long: context,profile,metric,value; gpu.time re-sums to 274400 ns, no zeros"
else
  fail "export --table --long: $(cat "$tmp/err")"; head -n 3 "$tmp/long.csv"
fi
if "$G" export --table "$tmp/simdb" | head -n 1 | grep -q 'gpu.pc'; then
  fail "export --table: columns of metrics nothing filled (gpu.pc.*)"
else
  pass "export --table: no columns for metrics nothing filled"
fi
"$G" report --long "$tmp/simdb" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "report: --long is an option of export --table" "$tmp/err" &&
  pass "report --long refused" || fail "report --long: $(cat "$tmp/err")"

# Hatchet: two runs of the same OpenCL program have the same frames.
CL=$PWD/$B/tests/run_cl_plain
if [ -x "$CL" ] && ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
  for r in 1 2 3; do
    POCL_CACHE_DIR=$tmp/pocl "$G" run -o "$tmp/cl$r" "$CL" >/dev/null 2>&1
  done
  frames() { # DB: every frame with GPU operations beneath, in order, as "type|name|binary"
    "$G" export --hatchet --metric gpu.count "$1" |
      python3 -c 'import json, sys
def walk(n):
    if n["metrics"]["gpu.count (inc)"] == 0:
        return  # sampled CPU stacks (GPU_IDLE_CAUSE) differ between runs
    print(n["frame"]["type"] + "|" + n["frame"]["name"] + "|" + n.get("binary", ""))
    for k in n["children"]:
        walk(k)
walk(json.load(sys.stdin)[0])'
  }
  for r in 1 2 3; do "$G" analyze -j 1 "$tmp/cl$r" -o "$tmp/cldb$r" >/dev/null 2>&1; done
  # report DIR of the cold-cache run (cl1: PoCL compiled its kernels).
  "$G" report "$tmp/cl1" >"$tmp/rep" 2>&1
  "$G" report --threshold 0 "$tmp/cl1" >"$tmp/rep0" 2>&1
  "$G" report "$tmp/cl1" --threshold 100 >"$tmp/rep100" 2>&1
  long=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$tmp/rep0" "$tmp/rep")
  if [ "$long" -le 200 ] && grep -q 'CPU_IDLE_CAUSE GPU_IDLE_CAUSE  Context$' "$tmp/rep" &&
     grep -q '^ *[0-9]* *[0-9.]* [mun]*s .* kernel scale$' "$tmp/rep"; then
    pass "report DIR: lines of at most 200 bytes ($long), full column headers"
  else
    fail "report DIR: lines up to $long bytes, or a header cut"; grep Context "$tmp/rep"
  fi
  n=$(wc -l <"$tmp/rep") n0=$(wc -l <"$tmp/rep0") n100=$(wc -l <"$tmp/rep100")
  if [ "$n0" -ge "$n" ] && [ "$n" -gt "$n100" ] &&
     ! grep -q "left out" "$tmp/rep0" &&
     grep -q "contexts\? under 100% of the run in every column left out: --threshold 0 shows them" "$tmp/rep100"; then
    pass "report DIR --threshold: $n0 lines with 0, $n by default (1%), $n100 with 100; what is left out is said"
  else
    fail "report DIR --threshold ($n0 / $n / $n100 lines)"; tail -n 3 "$tmp/rep100"
  fi
  if ! grep -qE ' (_start|__libc_start_[a-z_]*|start_thread|__clone3?)\+0x' "$tmp/rep0" &&
     awk '/Context$/ { c = index($0, "Context") }
          c && substr($0, c) ~ /^main\+0x[0-9a-f]+ \(run_cl_plain\)$/ { top = 1 }
          END { exit !top }' "$tmp/rep0"; then
    pass "report DIR: no runtime frames: main at the top"
  else
    fail "report DIR: runtime frames shown"; grep -E ' (_start|__libc_start_[a-z_]*|start_thread|__clone3?)\+0x' "$tmp/rep0" | head -3
  fi
  # Kernel names without the binary: the same in a cold and a warm run.
  for r in 1 2; do
    "$G" report --metric gpu.count "$tmp/cldb$r" >"$tmp/v$r"
    "$G" export --folded --metric gpu.count "$tmp/cldb$r" | grep kernel | sort >"$tmp/fold$r"
    "$G" export --table "$tmp/cldb$r" >"$tmp/tab$r.csv"
  done
  if ! grep -q '\[binaries/' "$tmp/v1" "$tmp/fold1" "$tmp/tab1.csv" &&
     grep -q 'kernel scale$' "$tmp/v1" && [ -s "$tmp/fold1" ] &&
     diff -q "$tmp/fold1" "$tmp/fold2" >/dev/null &&
     python3 - "$tmp/tab1.csv" "$tmp/tab2.csv" <<'PY'; then
import csv, sys
bins = []
for f in sys.argv[1:]:
    rows = [r for r in csv.DictReader(open(f, newline="")) if r["kind"] == "kernel"]
    assert rows and all(r["name"].startswith("kernel ") and "[" not in r["name"] for r in rows)
    assert all(r["binary"].startswith("binaries/") and r["binary"].endswith(".clbin") for r in rows)
    bins.append({r["binary"] for r in rows})
assert bins[0] != bins[1], "PoCL's binaries differ between a cold and a warm cache"
PY
    pass "kernel names without the binary in views, folded stacks, tables: a cold and a warm run's $(wc -l <"$tmp/fold1") kernel stacks match; the binaries (a column of the table) differ"
  else
    fail "kernel names carry the binary, or the runs' stacks differ"; diff "$tmp/fold1" "$tmp/fold2" | head
  fi
  frames "$tmp/cldb2" >"$tmp/f2"
  frames "$tmp/cldb3" >"$tmp/f3"
  if grep -qx 'kernel|kernel scale|binaries/[0-9a-f]*\.clbin' "$tmp/f2" &&
     grep -qx 'kernel|kernel shift|binaries/[0-9a-f]*\.clbin' "$tmp/f2" &&
     diff -q "$tmp/f2" "$tmp/f3" >/dev/null; then
    pass "Hatchet: kernel frames without the binary (a field of its own); two runs' frames match ($(wc -l <"$tmp/f2") nodes)"
  else
    fail "Hatchet frames of two runs"; grep kernel "$tmp/f2"; diff "$tmp/f2" "$tmp/f3" | head
  fi
else
  echo "SKIP Hatchet frames of an OpenCL program (no OpenCL)"
fi
[ $fails -eq 0 ]
