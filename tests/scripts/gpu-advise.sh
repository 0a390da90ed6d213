#!/usr/bin/env bash
# `gpuprof advise` end to end on real H100 data: tests/tools/gen_pc_measure
# writes a measurement holding the fixture's cubin and Nsight Compute's
# per-instruction stall samples of kernels.cu's six kernels
# (tests/fixtures/gpu-sm90); `gpuprof analyze` makes a database; `gpuprof
# advise` must name, for each kernel, the optimization of the cause it was
# built with, at the right source lines, with nvdisasm (the fixture's
# stand-in) and, saying so once, without it.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
G=$B/bin/gpuprof
F=$PWD/tests/fixtures/gpu-sm90
if [ ! -x "$B/tests/gen_pc_measure" ] || [ ! -x "$G" ]; then
  fail "$B/tests/gen_pc_measure and $G are built (run make tests first)"
  exit 1
fi
"$B/tests/gen_pc_measure" "$F" "$tmp/m" 2>"$tmp/err" &&
  GPUPROF_NVDISASM=/nonexistent "$G" analyze -o "$tmp/db" "$tmp/m" >/dev/null 2>"$tmp/aerr" &&
  pass "measurement analyzed" || { fail "analyze: $(cat "$tmp/err" "$tmp/aerr")"; exit 1; }
# Without nvdisasm, analyze says so once: what it looked for, what is lost.
want="gpuprof: note: GPUPROF_NVDISASM=/nonexistent is not executable: the PC \
samples of GPU binaries (first $tmp/m/binaries/0123456789abcdef0123456789abcdef.cubin) \
stay instruction lines beneath their kernels, and no GPU calling contexts \
(device functions, their call paths, loops) are built; set GPUPROF_NVDISASM \
or CUDA_HOME to the CUDA toolkit's nvdisasm and analyze again"
[ "$(grep -c 'note:' "$tmp/aerr")" = 1 ] && grep -qxF "$want" "$tmp/aerr" &&
  pass "analyze without nvdisasm: one note" ||
  fail "analyze without nvdisasm: $(cat "$tmp/aerr")"
env -u GPUPROF_NVDISASM CUDA_HOME="$tmp/nocuda" PATH=/nonexistent \
  "$G" analyze -o "$tmp/db3" "$tmp/m" >/dev/null 2>"$tmp/aerr"
if [ -x /usr/local/cuda/bin/nvdisasm ]; then
  pass "analyze, nvdisasm nowhere: skipped (/usr/local/cuda/bin/nvdisasm exists)"
else
  [ "$(grep -c 'note:' "$tmp/aerr")" = 1 ] &&
    grep -qF "gpuprof: note: nvdisasm not found (GPUPROF_NVDISASM, \$CUDA_HOME/bin, /usr/local/cuda/bin, PATH): the PC samples" "$tmp/aerr" &&
    pass "analyze, nvdisasm nowhere: one note naming where it looked" ||
    fail "analyze, nvdisasm nowhere: $(cat "$tmp/aerr")"
fi
GPUPROF_NVDISASM=/nonexistent "$G" analyze --no-structure -o "$tmp/db4" "$tmp/m" >/dev/null 2>"$tmp/aerr"
grep -q "note:" "$tmp/aerr" && fail "analyze --no-structure: a note" ||
  pass "analyze --no-structure: no note (nothing listed)"

GPUPROF_NVDISASM=$F/nvdisasm "$G" advise --top 1 "$tmp/db" >"$tmp/out" 2>"$tmp/err" &&
  pass "advise exits 0" || fail "advise: $(cat "$tmp/err")"
# top: the first suggestion after each kernel's header
top() { awk -v k="kernel $1 [" 'index($0, k) == 1 { f = 1; next }
  f && /^  1\. / { sub(/^  1\. /, ""); sub(/:.*/, ""); print; exit }' "$2"; }
while IFS='|' read -r kernel want; do
  got=$(top "$kernel" "$tmp/out")
  [ "$got" = "$want" ] && pass "$kernel: $want" ||
    fail "$kernel: top advice '$got', not '$want'"
done <<'LIST'
chase(int const*, int*, int)|Indirect Memory Access Reduction
bank_conflict(float*, int)|Shared Memory Transaction Reduction
divergent(float*, int, int)|Divergence Reduction
calls(float*, int*, int)|Function Inlining
barrier_wait(float*, int)|Warp Balance
fp64(double*, int)|Strength Reduction
LIST
grep -q "^     at kernels.cu:67 in barrier_wait(float\*, int): +0x4c0 BAR.SYNC" "$tmp/out" &&
  pass "barrier_wait's hotspot is the barrier at line 67" ||
  fail "barrier_wait's hotspot: $(grep -A3 'kernel barrier' "$tmp/out")"
grep -q "loop at kernels.cu:12: +0x[0-9a-f]* LDG.E" "$tmp/out" &&
  pass "chase's hotspots are the loads of the loop at line 12" ||
  fail "chase's hotspots: $(grep -A4 'kernel chase' "$tmp/out")"
# (fib's 969940 samples less the 140 drain stalls at its entry, just after
# the kernel's EXIT: the EXIT's)
grep -q "^      fib(int) \[recursive\]  969800 (96.3%)$" "$tmp/out" &&
  pass "calls: fib is one recursive context beneath the kernel" ||
  fail "calls' contexts: $(grep -A8 'calling contexts' "$tmp/out")"
[ "$(grep -c '^  2\. ' "$tmp/out")" = 0 ] && pass "--top 1" || fail "--top 1 shows more"
grep -q "^note:" "$tmp/out" && fail "a note with nvdisasm: $(grep '^note' "$tmp/out")" ||
  pass "no note with nvdisasm"

GPUPROF_NVDISASM=/nonexistent "$G" advise "$tmp/db" >"$tmp/out2" 2>"$tmp/err" &&
  pass "advise without nvdisasm exits 0" || fail "advise without nvdisasm: $(cat "$tmp/err")"
[ "$(grep -c '^note: .*GPUPROF_NVDISASM.*advice per kernel only' "$tmp/out2")" = 1 ] &&
  pass "without nvdisasm: said once" || fail "without nvdisasm: $(head -2 "$tmp/out2")"
[ "$(top 'barrier_wait(float*, int)' "$tmp/out2")" = "Warp Balance" ] &&
  pass "without nvdisasm: per-kernel advice" || fail "without nvdisasm: $(cat "$tmp/out2")"

grep -qx "ranking: per kernel, by estimated speedup (kernels by samples); a trace (GPUPROF_TRACE=1) ranks them by what the whole run would gain" "$tmp/out" &&
  pass "without a trace: what ranks the advice is said" ||
  fail "ranking line: $(head -3 "$tmp/out")"

# Launches and the device (tiny blocks for chase, fewer blocks than SMs for
# bank_conflict): the parallelism optimizers through the command.
"$B/tests/gen_pc_measure" "$F" "$tmp/mp" 1 _Z5chasePKiPii=1,67584,32,22,0 \
  _Z13bank_conflictPfi=3,66,1024,32,4096 2>"$tmp/err" &&
  GPUPROF_NVDISASM=$F/nvdisasm "$G" analyze -o "$tmp/dbp" "$tmp/mp" >/dev/null 2>&1 &&
  GPUPROF_NVDISASM=$F/nvdisasm "$G" advise --top 0 "$tmp/dbp" >"$tmp/outp" 2>"$tmp/err" &&
  pass "advise with launches" || fail "advise with launches: $(cat "$tmp/err")"
grep -q "^  [0-9]*\. Thread Increase: estimated speedup 1\.99x (parallelism)$" "$tmp/outp" &&
  grep -q "launch blocks of 64 threads (33792 blocks, 32 resident per SM) instead of 32 threads" "$tmp/outp" &&
  pass "chase with 32-thread blocks: Thread Increase" ||
  fail "Thread Increase: $(grep -A12 'kernel chase' "$tmp/outp")"
grep -q "^  [0-9]*\. Block Increase: estimated speedup 1\.24x (parallelism)$" "$tmp/outp" &&
  pass "bank_conflict on 66 SMs: Block Increase" ||
  fail "Block Increase: $(grep -A12 'kernel bank' "$tmp/outp")"
grep -q "^  note: launch: 67584 blocks of 32 threads, 22 registers per thread, 0 bytes of shared memory per block (1 launch): 32 of 64 warps resident per SM (limited by blocks per SM), blocks on 132 of 132 SMs$" "$tmp/outp" &&
  pass "the launch and its occupancy are said" ||
  fail "launch note: $(grep 'note: launch' "$tmp/outp")"

"$G" advise "$tmp/nodb" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "nodb" "$tmp/err" && pass "a missing database: exit 1, named" ||
  fail "a missing database: $(cat "$tmp/err")"
"$G" advise --top x "$tmp/db" >/dev/null 2>&1
[ $? = 2 ] && pass "bad --top: exit 2" || fail "bad --top"
# GPU calling contexts in the database: analyze with nvdisasm (the
# stand-in) rebuilds the tree beneath each kernel; report shows the device
# functions beneath the lines of their calls, fib as one recursive frame,
# loops as scopes.
GPUPROF_NVDISASM=$F/nvdisasm "$G" analyze -o "$tmp/gdb" "$tmp/m" >/dev/null 2>"$tmp/err" &&
  pass "analyze with nvdisasm" || fail "analyze with nvdisasm: $(cat "$tmp/err")"
grep -q "note:" "$tmp/err" && fail "analyze with nvdisasm: a note" ||
  pass "analyze with nvdisasm: no note"
"$G" report --metric gpu.pc.samples --depth 12 --threshold 0 "$tmp/gdb" >"$tmp/rep" 2>"$tmp/err" ||
  fail "report: $(cat "$tmp/err")"
cubin="0123456789abcdef0123456789abcdef.cubin"
want=$(cat <<EOF
       1007392  82.69%              0      kernel calls(float*, int*, int)
        970094  79.63%            154        kernels.cu:57
        969940  79.62%              0          fib(int) [recursive] ($cubin)
        969940  79.62%         969940            kernels.cu:52
         37138   3.05%          18150        kernels.cu:56
         18231   1.50%              0          middle(float, int) ($cubin)
         17673   1.45%              0            loop at kernels.cu:49
         17673   1.45%            252              kernels.cu:49
         17421   1.43%              0                leaf(float) ($cubin)
         17421   1.43%          17421                  kernels.cu:46
           518   0.04%            518            kernels.cu:49
            40   0.00%             40            kernels.cu:50
           757   0.06%              0          leaf(float) ($cubin)
           757   0.06%            757            kernels.cu:46
EOF
)
[ "$(grep -A13 '^ *[0-9]* *[0-9.]*% *0      kernel calls' "$tmp/rep")" = "$want" ] &&
  pass "report: the calling contexts beneath calls" ||
  fail "report: $(grep -A14 'kernel calls' "$tmp/rep")"
"$G" export --hatchet -o "$tmp/h.json" "$tmp/gdb" 2>"$tmp/err" &&
  grep -qF "\"name\": \"middle(float, int) ($cubin)\", \"type\": \"gpu function\"" "$tmp/h.json" &&
  pass "hatchet: GPU functions" || fail "hatchet: $(cat "$tmp/err")"
# What was apportioned is said (gpu.pc.apportioned_samples: leaf's
# instructions sit in two call paths, 17421 + 757 samples) in every view
# and export.
"$G" report --view flat --metric gpu.pc.apportioned_samples --threshold 0 "$tmp/gdb" >"$tmp/flat" 2>"$tmp/err"
grep -qE "^ +18178 100.00% +0  leaf\(float\) \($cubin\)$" "$tmp/flat" &&
  grep -qE "^ +17421  95.84% +0  middle\(float, int\) \($cubin\)$" "$tmp/flat" &&
  pass "flat view: GPU functions as procedures, their apportioned samples" ||
  fail "flat view: $(cat "$tmp/flat" "$tmp/err")"
"$G" export --folded --metric gpu.pc.apportioned_samples "$tmp/gdb" >"$tmp/fold" 2>"$tmp/err"
grep -qxF "main;<kernel launch>;kernel calls(float*, int*, int);kernels.cu:56;leaf(float) ($cubin);kernels.cu:46 757" "$tmp/fold" &&
  [ "$(wc -l <"$tmp/fold")" = 2 ] &&
  pass "folded stacks: the GPU calling contexts of apportioned samples" ||
  fail "folded: $(cat "$tmp/fold" "$tmp/err")"
"$G" export --table "$tmp/gdb" >"$tmp/tab.csv" 2>"$tmp/err" &&
  head -1 "$tmp/tab.csv" | grep -q ",gpu.pc.apportioned_samples,gpu.pc.apportioned_samples (inc)," &&
  grep -q "^[0-9]*,[0-9]*,gpu function,fib(int) \[recursive\] ($cubin)," "$tmp/tab.csv" &&
  pass "table: GPU functions and the apportioned samples" ||
  fail "table: $(head -c 300 "$tmp/tab.csv"; cat "$tmp/err")"
"$G" report --metric gpu.pc.samples --depth 12 --threshold 0 "$tmp/db" | grep -q "middle" &&
  fail "without nvdisasm at analyze: GPU functions" ||
  pass "without nvdisasm at analyze: lines beneath kernels as before"
exit $((fails > 0))
