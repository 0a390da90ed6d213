#!/usr/bin/env bash
# The pipeline end to end, as a user sees it: tests/sim/sim_demo (two host
# threads on the simulated GPU) writes a profile whose `gpuprof dump` shows,
# per thread, the documented kernels, copies and graph kernels with their
# exact counts, device times and bytes, each beneath a placeholder beneath
# CPU frames of the program beneath the user region; with GPUPROF_TRACE=1 a
# trace appears beside the profile.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -x "$B/tests/sim_demo" ] || [ ! -x "$B/bin/gpuprof" ]; then
  fail "$B/tests/sim_demo and $B/bin/gpuprof are built (run make tests first)"
  exit 1
fi
if GPUPROF_OUTPUT=$tmp/out GPUPROF_TRACE=1 "$B/tests/sim_demo" >"$tmp/run.log" 2>&1; then
  pass "sim_demo runs"
else
  fail "sim_demo runs"; cat "$tmp/run.log"; exit 1
fi
prof=$(ls "$tmp"/out/*.gpuprof 2>/dev/null)
if [ -n "$prof" ] && "$B/bin/gpuprof" dump "$prof" >"$tmp/dump" 2>&1; then
  pass "gpuprof dump reads the profile"
else
  fail "gpuprof dump reads the profile"; cat "$tmp/dump"; exit 1
fi
# expect TEXT COUNT: lines containing every word of TEXT, COUNT times.
expect() {
  local n
  n=$(grep -cE "$1" "$tmp/dump")
  if [ "$n" = "$2" ]; then pass "$2 x /$1/"; else fail "$2 x /$1/ (found $n)"; grep -E "$1" "$tmp/dump"; fi
}
expect 'kernel stencil gpu\.count=20 gpu\.time=60\.000 us$' 2
expect 'kernel reduce gpu\.count=20 gpu\.time=20\.000 us$' 2
expect 'kernel init_a gpu\.count=1 gpu\.time=500 ns$' 2
expect 'kernel init_b gpu\.count=1 gpu\.time=700 ns$' 2
expect '<gpu copy d2h> gpu\.count=20 gpu\.time=40\.000 us gpu\.bytes=20971520$' 2
expect '<gpu copy h2d> gpu\.count=1 gpu\.time=16\.000 us gpu\.bytes=8388608$' 2
expect 'counters .*gpu\.operations=126 gpu\.activities=126' 1
# Structure: each kernel line sits deeper than a frame of the program, which
# sits deeper than the region "timesteps".
if awk '
  function depth(s) { match(s, /^ */); return RLENGTH }
  / timesteps region\.visits/ { r = depth($0); inreg = 1; next }
  inreg && depth($0) <= r { inreg = 0 }
  inreg && /sim_demo/ { f = depth($0) }
  inreg && /kernel stencil/ { if (f > r && depth($0) > f) ok++ }
  END { exit ok == 2 ? 0 : 1 }' "$tmp/dump"; then
  pass "kernels beneath frames of the program beneath the region"
else
  fail "kernels beneath frames of the program beneath the region"; cat "$tmp/dump"
fi
# The report merges both threads: GPU operations beneath function names.
if "$B/bin/gpuprof" report "$tmp/out" >"$tmp/report" 2>&1; then
  pass "gpuprof report exits 0"
else
  fail "gpuprof report exits 0"; cat "$tmp/report"
fi
rexpect() {
  if grep -qE "$1" "$tmp/report"; then pass "report: /$1/"; else fail "report: /$1/"; cat "$tmp/report"; fi
}
rexpect '^GPU operations by calling context: 126 operations, 274\.400 us of device time$'
rexpect '^ +120 +240\.000 us +41943040 +87\.5%  timesteps$'
rexpect '^ +40 +120\.000 us +43\.7% +compute_step\+0x[0-9a-f]+ \(sim_demo\)$'
rexpect '^ +40 +120\.000 us +43\.7% +kernel stencil$'
rexpect '^ +40 +40\.000 us +14\.6% +kernel reduce$'
rexpect '^ +40 +80\.000 us +41943040 +29\.2% +exchange_halo\+0x[0-9a-f]+ \(sim_demo\)$'
rexpect '^ +2 +32\.000 us +16777216 +11\.7% +<copy h2d>$'
rexpect '^ +2 +1\.000 us +0\.4% +kernel init_a$'
# Depth: kernel stencil is indented deeper than compute_step, deeper than timesteps.
if awk '/  timesteps$/ {r = index($0, "timesteps")} /compute_step\+/ && !f {f = index($0, "compute_step")}
        /kernel stencil$/ {k = index($0, "kernel")} END {exit !(r && f > r && k > f)}' "$tmp/report"; then
  pass "report: kernel beneath its function beneath its region"
else
  fail "report: kernel beneath its function beneath its region"
fi
trace=${prof%.gpuprof}.gptrace
if [ -s "$trace" ]; then pass "the trace is written beside the profile"; else fail "the trace is written beside the profile"; fi
if "$B/bin/gpuprof" dump "$trace" >"$tmp/tdump" 2>&1 &&
   [ "$(grep -cE '^gpu device 0 stream [01]: 63 records' "$tmp/tdump")" = 2 ] &&
   [ "$(grep -cE '^thread [0-9]+ "host-[01]" tid [0-9]+: 2 region records' "$tmp/tdump")" = 2 ] &&
   ! grep -q '^ignored' "$tmp/tdump"; then
  pass "gpuprof dump on the trace: 63 records on each stream, 2 regions per host thread"
else
  fail "gpuprof dump on the trace"; cat "$tmp/tdump"
fi
exit $((fails > 0))
