#!/usr/bin/env bash
# `gpuprof export --otf2 -o DIR DB` over an earlier export on a full disk:
# on a small tmpfs in a private mount namespace, an export of a traced
# tests/sim/sim_demo database is written; then the export is repeated into
# the same DIR with the free space cut to 0, 4 KiB, 8 KiB, ... until it
# succeeds. Each run that fails must exit 1 with one line, leave the
# earlier export byte for byte and nothing beside it (no temporary
# directory); the one that succeeds must leave an archive otf2-print reads
# without a word on stderr. Mounting needs root and `unshare -m`, the
# export OTF2 support: otherwise the script says SKIP (a build without it
# where the OTF2 3 headers are installed fails).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
G=$B/bin/gpuprof
if [ ! -x "$B/tests/sim_demo" ] || [ ! -x "$G" ]; then
  fail "$B/tests/sim_demo and $G are built (run make tests first)"
  exit 1
fi
. tests/support/mountns.sh
in_private_mounts export-otf2-disk-full.sh "$@"
tmp=$(mktemp -d)
trap 'umount "$tmp/mnt" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$tmp/mnt"
if ! mount -t tmpfs -o size=4m gpuprof-otf2full "$tmp/mnt" 2>"$tmp/mount.err"; then
  echo "SKIP export-otf2-disk-full.sh: cannot mount tmpfs: $(head -n 1 "$tmp/mount.err")"
  exit 0
fi
GPUPROF_OUTPUT=$tmp/out GPUPROF_TRACE=1 "$B/tests/sim_demo" >/dev/null 2>&1 &&
  "$G" analyze -o "$tmp/db" "$tmp/out" >/dev/null 2>"$tmp/err" ||
  { fail "sim_demo and analyze: $(cat "$tmp/err")"; exit 1; }
x=$tmp/mnt/x
"$G" export --otf2 -o "$x" "$tmp/db" >/dev/null 2>"$tmp/err"
rc=$?
. tests/support/otf2.sh
if [ $rc = 1 ] && grep -q "built without OTF2 support" "$tmp/err"; then
  if otf2_headers; then
    fail "the OTF2 3 headers are installed, but $B was built without OTF2 support (make rebuilds it)"
    exit 1
  fi
  echo "SKIP export-otf2-disk-full.sh: built without OTF2 support (no OTF2 3 headers here)"
  exit 0
fi
[ $rc = 0 ] || { fail "the earlier export: $(cat "$tmp/err")"; exit 1; }
cp -r "$x" "$tmp/ref"
free_kib() { df -k --output=avail "$tmp/mnt" | tail -n 1 | tr -d ' '; }
failed=0 bad=0 ok=0
for k in $(seq 0 64); do
  # Leave k * 4 KiB free.
  fill=$(( $(free_kib) - 4 * k ))
  [ "$fill" -gt 0 ] && fallocate -l "${fill}K" "$tmp/mnt/filler" 2>/dev/null
  "$G" export --otf2 -o "$x" "$tmp/db" >/dev/null 2>"$tmp/err"
  rc=$?
  rm -f "$tmp/mnt/filler"
  if [ $rc = 0 ]; then
    if otf2-print "$x/traces.otf2" >/dev/null 2>"$tmp/perr" && [ ! -s "$tmp/perr" ] &&
      [ "$(ls -A "$tmp/mnt")" = x ]; then
      ok=1
    else
      fail "with $((4 * k)) KiB free: the export succeeded but does not read: $(head -3 "$tmp/perr")"
      bad=1
    fi
    break
  fi
  failed=$((failed + 1))
  if [ $rc != 1 ] || [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -q "^gpuprof: OTF2 export: " "$tmp/err"; then
    fail "with $((4 * k)) KiB free: exit $rc, one line saying why: $(cat "$tmp/err")"
    bad=1
  fi
  if ! diff -r "$tmp/ref" "$x" >/dev/null 2>&1; then
    fail "with $((4 * k)) KiB free: the earlier export changed"
    bad=1
  fi
  if [ "$(ls -A "$tmp/mnt")" != x ]; then
    fail "with $((4 * k)) KiB free: left beside it: $(ls -A "$tmp/mnt" | tr '\n' ' ')"
    bad=1
  fi
  [ $bad = 1 ] && break
done
[ $failed -gt 0 ] && [ $bad = 0 ] &&
  pass "$failed exports on a full disk failed with one line each, the earlier export left byte for byte, nothing beside it" ||
  { [ $bad = 1 ] || fail "no export failed for lack of space (the steps are too coarse)"; }
[ $ok = 1 ] && pass "the first export with room enough is a whole archive otf2-print reads" ||
  { [ $bad = 1 ] || fail "no export succeeded with up to 256 KiB free"; }
[ "$fails" -eq 0 ]
