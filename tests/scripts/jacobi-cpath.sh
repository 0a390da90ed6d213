#!/usr/bin/env bash
# The demo program's answers (examples/opencl/jacobi on PoCL, traced):
#   - its critical path passes through both plate threads and their
#     kernels (the heater alternates: the heated plate of each round holds
#     the run up, and the two meet at the barrier between rounds), the
#     main thread's join is no work on it (the issue 23 symptom: 92 % of
#     the path on main's "simulate"), and the barrier wait is found;
#   - its projection with the kernel made faster (`gpuprof project
#     --speedup kernel:jacobi=F` on a run with kernel work W) is what a
#     run with half the kernel work (W/2) gives, F being how much faster
#     that run's kernels really were (on PoCL, the CPU shared with other
#     work, not 2): tests/bench/jacobi_projection.sh (the measurement
#     `make bench` prints) over 3 pairs of runs, the median error within
#     10 points of the run; the error at F = 2 is printed.
# SKIP without the example or an OpenCL platform.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
J=$B/examples/opencl/jacobi
G=$B/bin/gpuprof
if [ ! -x "$J" ] || [ ! -x "$G" ]; then
  echo "SKIP jacobi-cpath.sh: $J is not built (no OpenCL headers here)"
  exit 0
fi
if [ ! -d /etc/OpenCL/vendors ] && [ -z "${OCL_ICD_VENDORS:-}" ]; then
  echo "SKIP jacobi-cpath.sh: no OpenCL platform installed"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export POCL_CACHE_DIR=$tmp/pocl
"$J" 256 8 1 >/dev/null 2>&1 || { fail "jacobi runs"; exit 1; } # cache warm

if GPUPROF_OUTPUT=$tmp/demo GPUPROF_TRACE=1 "$J" >/dev/null 2>"$tmp/err" &&
   "$G" analyze -o "$tmp/demo-db" "$tmp/demo" >/dev/null 2>>"$tmp/err"; then
  "$G" report --critical-path "$tmp/demo-db" >"$tmp/demo.p" 2>&1
  "$G" report --waits "$tmp/demo-db" >"$tmp/demo.w" 2>&1
  steps() { sed -n '3,/^ratings/p' "$tmp/demo.p" | grep -cE "$1"; }
  [ "$(steps ' plate 0 ')" -gt 0 ] && [ "$(steps ' plate 1 ')" -gt 0 ] &&
    pass "the path passes through both plate threads" ||
    { fail "the path passes through both plate threads"; head -40 "$tmp/demo.p"; }
  [ "$(steps 'GPU 0/0 +kernel jacobi')" -gt 0 ] && [ "$(steps 'GPU 0/1 +kernel jacobi')" -gt 0 ] &&
    pass "... and through the kernels of both queues" ||
    { fail "the path holds both queues' kernels"; head -40 "$tmp/demo.p"; }
  sim=$(awk '$NF == "simulate" && /^ +[0-9.]+ +[0-9.]+ +[0-9.]+ / { print $3; exit }' \
    <(sed -n '/^ratings/,$p' "$tmp/demo.p"))
  awk -v s="${sim:-0}" 'BEGIN { exit !(s < 0.05) }' &&
    pass "main's simulate (its join) is no work on the path (share ${sim:-0})" ||
    { fail "main's simulate on the path: share $sim"; sed -n '/^ratings/,$p' "$tmp/demo.p"; }
  grep -qE '^  WaitAtBarrier +1 ' "$tmp/demo.w" && grep -qE '^  WaitAtJoin +[12] ' "$tmp/demo.w" &&
    pass "the plates' barrier and main's joins are wait states" ||
    { fail "WaitAtBarrier x1 and WaitAtJoin"; cat "$tmp/demo.w"; }
else
  fail "jacobi runs traced and is analysed: $(cat "$tmp/err")"
fi

out=$(B=$B JACOBI_PAIRS=3 bash tests/bench/jacobi_projection.sh 2>&1)
echo "$out" | grep '^#'
bench() { echo "$out" | sed -n "s/^BENCH $1 \([-0-9.]*\) .*/\1/p"; }
err=$(bench projection_error_pct_jacobi) e2=$(bench projection_error_2x_pct_jacobi)
pc=$(bench projection_change_pct_jacobi) rc=$(bench real_change_pct_jacobi)
f=$(bench kernel_speedup_jacobi)
[ -n "$err" ] && awk -v e="$err" 'BEGIN { exit !(e <= 10) }' &&
  pass "projection of work 32 with kernel:jacobi=$f: $pc % against $rc % at work 16 (median error $err points of the run; at 2x: $e2 points; 3 pairs)" ||
  fail "projection of work 32 with kernel:jacobi=${f:-?}: $pc % against $rc % at work 16 (median error ${err:-?} points > 10)"
exit $((fails > 0))
