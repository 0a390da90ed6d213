#!/usr/bin/env bash
# `gpuprof analyze -o DB` over an earlier database on a full disk (issue
# 18, item 2): on a small tmpfs in a private mount namespace, an untraced
# database of tests/sim/sim_demo is written; then a traced analysis of
# another run goes into the same directory with the free space cut to 0,
# 4 KiB, 8 KiB, ... until it succeeds. Each run that fails must leave the
# earlier database byte for byte and nothing else in the directory (no
# trace.db beside it, no temporary); the one that succeeds must leave a
# readable traced database. Mounting needs root and `unshare -m`: without
# them the script says SKIP.
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
in_private_mounts analyze-disk-full.sh "$@"
tmp=$(mktemp -d)
trap 'umount "$tmp/mnt" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$tmp/mnt"
if ! mount -t tmpfs -o size=8m gpuprof-anfull "$tmp/mnt" 2>"$tmp/mount.err"; then
  echo "SKIP analyze-disk-full.sh: cannot mount tmpfs: $(head -n 1 "$tmp/mount.err")"
  exit 0
fi
GPUPROF_OUTPUT=$tmp/plain "$B/tests/sim_demo" >/dev/null 2>&1 &&
  GPUPROF_OUTPUT=$tmp/traced GPUPROF_TRACE=1 "$B/tests/sim_demo" >/dev/null 2>&1 ||
  { fail "sim_demo runs"; exit 1; }
db=$tmp/mnt/db
"$G" analyze -o "$db" "$tmp/plain" >/dev/null 2>"$tmp/err" && [ ! -e "$db/trace.db" ] ||
  { fail "the earlier (untraced) database: $(cat "$tmp/err")"; exit 1; }
cp -r "$db" "$tmp/ref"
free_kib() { df -k --output=avail "$tmp/mnt" | tail -n 1 | tr -d ' '; }
failed=0 bad=0 ok=0
for k in $(seq 0 64); do
  # Leave k * 4 KiB free.
  fill=$(( $(free_kib) - 4 * k ))
  [ "$fill" -gt 0 ] && fallocate -l "${fill}K" "$tmp/mnt/filler" 2>/dev/null
  "$G" analyze -o "$db" "$tmp/traced" >/dev/null 2>"$tmp/err"
  rc=$?
  rm -f "$tmp/mnt/filler"
  if [ $rc = 0 ]; then
    if [ -s "$db/trace.db" ] && "$G" report --trace "$db" >/dev/null 2>&1; then
      ok=1
    else
      fail "with $((4 * k)) KiB free: the analysis succeeded but the database does not read"
      bad=1
    fi
    break
  fi
  failed=$((failed + 1))
  if ! grep -q 'No space left on device' "$tmp/err"; then
    fail "with $((4 * k)) KiB free: the failure names something else: $(cat "$tmp/err")"
    bad=1
  fi
  for f in meta.db profile.db cct.db stats.db; do
    cmp -s "$tmp/ref/$f" "$db/$f" || { fail "with $((4 * k)) KiB free: $f is not the earlier one"; bad=1; }
  done
  if [ "$(ls -A "$db")" != "$(ls -A "$tmp/ref")" ]; then
    fail "with $((4 * k)) KiB free: the directory holds $(ls -A "$db" | tr '\n' ' ')"
    bad=1
  fi
  [ $bad = 1 ] && break
done
[ $bad = 0 ] && [ $failed -gt 0 ] &&
  pass "$failed analyses that ran out of space left the earlier database byte for byte, nothing beside it" ||
  fail "failed analyses keep the earlier database ($failed failed)"
[ $ok = 1 ] && pass "with room enough the traced database is written and reads" ||
  { [ $bad = 1 ] || fail "the analysis never succeeded within 256 KiB"; }
[ "$fails" -eq 0 ]
