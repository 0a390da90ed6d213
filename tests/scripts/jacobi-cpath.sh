#!/usr/bin/env bash
# The demo program's answers (examples/opencl/jacobi on PoCL, traced):
#   - its critical path passes through both plate threads and their
#     kernels (the heater alternates: the heated plate of each round holds
#     the run up, and the two meet at the barrier between rounds), the
#     main thread's join is no work on it (the issue 23 symptom: 92 % of
#     the path on main's "simulate"), and the barrier wait is found;
#   - its projection with the kernel twice as fast (`gpuprof project
#     --speedup kernel:jacobi=2` on a run with work W) is what runs with
#     half the kernel work (W/2) give: per pair of runs (W, then W/2, so
#     that both see the same load of a shared machine), the projected
#     change of the run minus the real one; the median over JACOBI_PAIRS
#     pairs (default 3) within 10 points. The figures are printed (with
#     BENCH=1 as BENCH lines, JACOBI_PAIRS=5: tests/bench.mk).
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
PAIRS=${JACOBI_PAIRS:-3}
W=${JACOBI_WORK:-32}
"$J" 256 8 "$W" >/dev/null 2>&1 && "$J" 256 8 $((W / 2)) >/dev/null 2>&1 ||
  { fail "jacobi runs"; exit 1; }   # the kernel cache warm for every run

traced() { # name args...: traced run analysed into $tmp/name-db
  local name=$1
  shift
  GPUPROF_OUTPUT=$tmp/$name GPUPROF_TRACE=1 "$J" "$@" >/dev/null 2>"$tmp/err" &&
    "$G" analyze -o "$tmp/$name-db" "$tmp/$name" >/dev/null 2>>"$tmp/err"
}
# "1.234 s" / "12.3 ms" -> ns
ns() { awk -v v="$1" -v u="$2" 'BEGIN { m = u == "ms" ? 1e6 : u == "us" ? 1e3 : u == "s" ? 1e9 : 1; printf "%.0f", v * m }'; }

if [ -z "${BENCH:-}" ]; then
  if traced demo 256 600 1; then
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
fi

# Projection: per pair, W traced and projected with the kernel twice as
# fast, against W/2 traced right after (the two see the same load); run
# times as the analysis measures them (first record to last). The error
# of a pair is the projected change of the run minus the real one, in
# points of the W run; its median over the pairs is the figure.
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
errs=() pcs=() rcs=()
for i in $(seq "$PAIRS"); do
  traced "w$i" 256 600 "$W" && traced "h$i" 256 600 $((W / 2)) ||
    { fail "jacobi runs with work $W and $((W / 2)): $(cat "$tmp/err")"; exit 1; }
  read -r a au b bu < <("$G" project --speedup kernel:jacobi=2 "$tmp/w$i-db" |
    sed -n 's/^projection, process 0: run \([0-9.]*\) \(m*s\) -> \([0-9.]*\) \(m*s\) .*/\1 \2 \3 \4/p')
  read -r c cu < <(sed -n 's/^critical path, process 0: .* of a \([0-9.]*\) \(m*s\) run.*/\1 \2/p' \
    <("$G" report --critical-path "$tmp/h$i-db"))
  read -r pc rc < <(awk -v m="$(ns "$a" "$au")" -v p="$(ns "$b" "$bu")" \
    -v r="$(ns "$c" "$cu")" 'BEGIN { printf "%.1f %.1f\n", 100 * (p - m) / m, 100 * (r - m) / m }')
  pcs+=("$pc") rcs+=("$rc") errs+=("$(awk -v p="$pc" -v r="$rc" 'BEGIN { printf "%.1f", p - r }')")
  echo "# pair $i: run $a $au, projected $b $bu ($pc %); work $((W / 2)): $c $cu ($rc %)"
  rm -rf "${tmp:?}/w$i" "$tmp/h$i" "$tmp/w$i-db" "$tmp/h$i-db"
done
err=$(median "${errs[@]}") pc=$(median "${pcs[@]}") rc=$(median "${rcs[@]}")
abs=$(awk -v e="$err" 'BEGIN { printf "%.1f", e < 0 ? -e : e }')
rel=$(awk -v e="$abs" -v r="$rc" 'BEGIN { printf "%.1f", 100 * e / (r < 0 ? -r : r) }')
if [ -n "${BENCH:-}" ]; then
  echo "BENCH projection_error_pct_jacobi $abs points"
  echo "BENCH projection_error_rel_jacobi $rel %"
  echo "BENCH projection_change_pct_jacobi $pc %"
  echo "BENCH real_change_pct_jacobi $rc %"
  exit 0
fi
awk -v e="$abs" 'BEGIN { exit !(e <= 10) }' &&
  pass "projection kernel:jacobi=2 on work $W: $pc % against $rc % at work $((W / 2)) (error $err points, $rel % of the change; medians of $PAIRS pairs)" ||
  fail "projection kernel:jacobi=2 on work $W: $pc % against $rc % at work $((W / 2)) (error $err points > 10; medians of $PAIRS pairs)"
exit $((fails > 0))
