#!/usr/bin/env bash
# The output directory under faults (tests/sim/outdir_prog, a traced run on
# the simulated GPU), on small tmpfs mounts in a private mount namespace:
#   - read-only: the program hears it at init, while it still runs; once
#     the directory is writable again, the exit writes the profile;
#   - too small for the trace: trace writing stops in time (records
#     dropped, counted, one line), the profile is written and read, and the
#     trace ends with a whole chunk (no ignored bytes);
#   - filled by someone else before the exit: the trace is cut back by whole
#     chunks (counted) so that the final profile is written.
# Mounting needs root and `unshare -m`: without them the script says SKIP.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
prog=$B/tests/outdir_prog
gp=$B/bin/gpuprof
if [ ! -x "$prog" ] || [ ! -x "$gp" ]; then
  fail "$prog and $gp are built (run make tests first)"
  exit 1
fi
. tests/support/mountns.sh
in_private_mounts output-faults.sh "$@"
tmp=$(mktemp -d)
trap 'umount "$tmp/ro" "$tmp/full" "$tmp/tight" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$tmp/ro" "$tmp/full" "$tmp/tight"
if ! mount -t tmpfs -o size=1m,ro gpuprof-ro "$tmp/ro" 2>"$tmp/mount.err" ||
   ! mount -t tmpfs -o size=3m gpuprof-full "$tmp/full" 2>>"$tmp/mount.err" ||
   ! mount -t tmpfs -o size=4m gpuprof-tight "$tmp/tight" 2>>"$tmp/mount.err"; then
  echo "SKIP output-faults.sh: cannot mount tmpfs: $(head -n 1 "$tmp/mount.err")"
  exit 0
fi

# Read-only, then writable.
GPUPROF_OUTPUT=$tmp/ro "$prog" 1000 "$tmp/go" >"$tmp/a.out" 2>"$tmp/a.err" &
pid=$!
for _ in $(seq 300); do
  grep -q waiting "$tmp/a.out" && break
  sleep 0.1
done
said=$(grep -c "cannot create files in the output directory '$tmp/ro'" "$tmp/a.err")
if grep -q waiting "$tmp/a.out" && [ "$said" -eq 1 ] &&
   [ "$(wc -l <"$tmp/a.err")" -eq 1 ]; then
  pass "a read-only output directory is said once at init, while the run goes on"
else
  fail "a read-only output directory is said once at init"; cat "$tmp/a.err"
fi
mount -o remount,rw "$tmp/ro"
touch "$tmp/go"
if wait "$pid" && prof=$(ls "$tmp"/ro/*.gpuprof 2>/dev/null) &&
   "$gp" dump "$prof" >"$tmp/a.dump" 2>&1 && grep -Eq "gpu\.activities=1000( |$)" "$tmp/a.dump"; then
  pass "the profile is written at exit once the directory is writable"
else
  fail "the profile is written at exit once the directory is writable"
  cat "$tmp/a.out" "$tmp/a.err" "$tmp/a.dump" 2>/dev/null
fi
if [ -z "$(ls -A "$tmp/ro" | grep -v '\.gpuprof$')" ]; then
  pass "no probe or temporary file is left in the output directory"
else
  fail "no probe or temporary file is left"; ls -la "$tmp/ro"
fi

# A 3 MiB file system and 200000 traced kernels (about 13 MB of trace).
if GPUPROF_TRACE=1 GPUPROF_OUTPUT=$tmp/full "$prog" 200000 >"$tmp/b.out" 2>"$tmp/b.err"; then
  pass "the final profile is written when the trace fills the disk"
else
  fail "the final profile is written when the trace fills the disk"
  cat "$tmp/b.out" "$tmp/b.err"
fi
prof=$(ls "$tmp"/full/*.gpuprof 2>/dev/null)
trace=$(ls "$tmp"/full/*.gptrace 2>/dev/null)
if [ -n "$prof" ] && "$gp" dump "$prof" >"$tmp/b.dump" 2>&1; then
  dropped=$(grep -o 'records.dropped=[0-9]*' "$tmp/b.dump" | cut -d= -f2)
fi
if [ -n "$prof" ] && grep -Eq "gpu\.activities=200000( |$)" "$tmp/b.dump" &&
   [ "${dropped:-0}" -gt 0 ]; then
  pass "the profile reads back with every operation and the dropped trace records ($dropped)"
else
  fail "the profile reads back with the dropped trace records"; cat "$tmp/b.dump"
fi
if [ "$(grep -c 'trace writing stops so that the profile can be written' "$tmp/b.err")" -eq 1 ] &&
   [ "$(wc -l <"$tmp/b.err")" -eq 1 ]; then
  pass "the stop is said once"
else
  fail "the stop is said once"; cat "$tmp/b.err"
fi
if [ -n "$trace" ] && "$gp" dump "$trace" >"$tmp/b.tdump" 2>&1 &&
   ! grep -qi "ignored" "$tmp/b.tdump"; then
  pass "the trace ends with a whole chunk ($(stat -c %s "$trace") bytes)"
else
  fail "the trace ends with a whole chunk"; head -n 20 "$tmp/b.tdump"
fi

# 20000 traced kernels (about 1.3 MB of trace), then another writer fills
# the file system while the program waits, then it exits.
GPUPROF_TRACE=1 GPUPROF_OUTPUT=$tmp/tight "$prog" 20000 "$tmp/go2" >"$tmp/c.out" 2>"$tmp/c.err" &
pid=$!
for _ in $(seq 300); do
  grep -q waiting "$tmp/c.out" && break
  sleep 0.1
done
dd if=/dev/zero of="$tmp/tight/filler" bs=64k >/dev/null 2>&1
touch "$tmp/go2"
if wait "$pid"; then
  pass "the final profile is written on a file system another writer filled"
else
  fail "the final profile is written on a file system another writer filled"
  cat "$tmp/c.out" "$tmp/c.err"
fi
prof=$(ls "$tmp"/tight/*.gpuprof 2>/dev/null)
trace=$(ls "$tmp"/tight/*.gptrace 2>/dev/null)
dropped=
if [ -n "$prof" ] && "$gp" dump "$prof" >"$tmp/c.dump" 2>&1; then
  dropped=$(grep -o 'records.dropped=[0-9]*' "$tmp/c.dump" | cut -d= -f2)
fi
if [ -n "$prof" ] && grep -Eq "gpu\.activities=20000( |$)" "$tmp/c.dump" &&
   [ "${dropped:-0}" -gt 0 ] &&
   [ "$(grep -c 'no room for the profile.*the trace was cut back' "$tmp/c.err")" -eq 1 ]; then
  pass "the trace was cut back for it, said once, the records counted ($dropped)"
else
  fail "the trace was cut back for the profile"; cat "$tmp/c.err" "$tmp/c.dump" 2>/dev/null | head -n 20
fi
if [ -n "$trace" ] && "$gp" dump "$trace" >"$tmp/c.tdump" 2>&1 &&
   ! grep -qi "ignored" "$tmp/c.tdump"; then
  pass "the cut trace ends with a whole chunk ($(stat -c %s "$trace") bytes)"
else
  fail "the cut trace ends with a whole chunk"; head -n 20 "$tmp/c.tdump"
fi
[ "$fails" -eq 0 ]
