#!/usr/bin/env bash
# The trace database end to end: tests/sim/sim_demo with GPUPROF_TRACE=1
# (two threads, each its own stream: per stream 40 kernels, 20 copies
# device-to-host, 1 host-to-device, a graph of 2 kernels; per thread 2
# regions and 63 API calls), `gpuprof analyze` writes trace.db; every
# record is where the trace had it, with a database context, streams sorted
# (the reader refuses unsorted ones), the same bytes with a memory budget;
# damage is refused naming the file; an analysis without traces leaves no
# trace.db behind.
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
GPUPROF_OUTPUT=$tmp/out GPUPROF_TRACE=1 "$B/tests/sim_demo" >/dev/null 2>&1 ||
  { fail "sim_demo runs"; exit 1; }
"$G" analyze -j 2 -o "$tmp/db" "$tmp/out" >/dev/null 2>"$tmp/err" && [ -s "$tmp/db/trace.db" ] &&
  pass "analyze writes trace.db" || { fail "analyze writes trace.db: $(cat "$tmp/err")"; exit 1; }
"$G" report --trace "$tmp/db" >"$tmp/tr" 2>"$tmp/err" &&
  pass "report --trace reads it" || { fail "report --trace: $(cat "$tmp/err")"; exit 1; }
check() { # what pattern count
  local n
  n=$(grep -cE "$2" "$tmp/tr")
  [ "$n" = "$3" ] && pass "$1" || { fail "$1 (found $n, want $3)"; cat "$tmp/tr"; }
}
# GPU_IDLE_CAUSE samples add a stream when the timer fired (CPU time while
# no kernel ran: the machine's to decide); the other 8 are the run's.
check "8 streams besides CPU samples" '^stream [0-9]+: .*, (device work|regions|GPU API calls|dependency notes):' 8
check "two threads' dependency notes (their device syncs), 1 each" '^stream [0-9]+: process 0, thread [0-9]+ "host-[01]", dependency notes: 1 records$' 2
check "two GPU streams of 63 records" '^stream [0-9]+: process 0, GPU device 0 stream [01], device work: 63 records' 2
check "two threads' regions, 2 each" '^stream [0-9]+: process 0, thread [0-9]+ "host-[01]", regions: 2 records' 2
check "two threads' API calls, 63 each" '^stream [0-9]+: process 0, thread [0-9]+ "host-[01]", GPU API calls: 63 records' 2
check "copies device-to-host: 20 per stream, on the device and as calls, with their call site" '^ +20  <copy d2h>  from exchange_halo \(sim_demo\) at sim_demo\.c:49$' 4
check "kernels by name and call site" '^ +20  kernel stencil  from compute_step \(sim_demo\) at sim_demo\.c:39$' 4
check "the graph launch: several kernels" '^ +[12]  <kernel launch> \(several kernels\)  from setup \(sim_demo\) at sim_demo\.c:33$' 4
check "one sync per thread" '^ +1  <sync>  from rank_thread \(sim_demo\) at sim_demo\.c:71$' 2
check "every record has a context" 'unknown context' 0
# The same records as the trace file says (gpuprof dump of the .gptrace).
"$G" dump "$tmp"/out/*.gptrace >"$tmp/dump" 2>&1
want=$(grep -cE '^gpu device 0 stream [01]: 63 records' "$tmp/dump")
[ "$want" = 2 ] && pass "gpuprof dump agrees: 63 device records per stream" ||
  { fail "gpuprof dump agrees"; cat "$tmp/dump"; }
"$G" analyze --memory 16M -o "$tmp/db2" "$tmp/out" >/dev/null 2>&1 &&
  cmp -s "$tmp/db/trace.db" "$tmp/db2/trace.db" &&
  pass "the same trace.db with a memory budget" || fail "the same trace.db with a memory budget"
cp -r "$tmp/db" "$tmp/dbx"
printf 'XXXX' | dd of="$tmp/dbx/trace.db" bs=1 seek=100 conv=notrunc 2>/dev/null
"$G" report --trace "$tmp/dbx" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "dbx/trace\.db: checksum mismatch" "$tmp/err" &&
  pass "a damaged trace.db is refused naming it" || { fail "a damaged trace.db is refused naming it: $(cat "$tmp/err")"; }
# Importance (seed 001): each operation kind's share of all GPU time:
# kernels 2 x 81,200 ns, copies device-to-host 2 x 40,000, host-to-device
# 2 x 16,000, of 274,400 ns.
"$G" report --importance --view flat --metric gpu_api_importance --threshold 0 "$tmp/db" >"$tmp/imp" 2>&1
for want in "0.5918 <kernel launch>" "0.2915 <copy d2h>" "0.1166 <copy h2d>"; do
  v=${want%% *}; n=${want#* }
  grep -qE "^ +$v +[0-9.]+  $n\$" "$tmp/imp" && pass "gpu_api_importance of $n: $v" ||
    { fail "gpu_api_importance of $n: $v"; cat "$tmp/imp"; }
done
# --pc on a database without PC samples: a clear error, exit 1.
"$G" report --pc "$tmp/db" >"$tmp/pc" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q 'no PC samples.*GPUPROF_CUPTI_PC_SAMPLING' "$tmp/pc" &&
  pass "report --pc without PC samples: exit 1, says how to measure them" ||
  { fail "report --pc without PC samples (exit $rc)"; cat "$tmp/pc"; }
rm "$tmp"/out/*.gptrace
"$G" analyze -o "$tmp/db" "$tmp/out" >/dev/null 2>&1 && [ ! -e "$tmp/db/trace.db" ] &&
  "$G" report --trace "$tmp/db" | grep -q '^trace database: 0 streams$' &&
  pass "without traces: no trace.db (the earlier one removed)" || fail "without traces: no trace.db"
[ "$fails" -eq 0 ]
