#!/usr/bin/env bash
# The gpuprof command as a user meets it: dump and report of a real run,
# and for damaged or missing input one line on stderr naming the file and
# what is wrong, with exit status 1 (2 for bad usage).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$B/bin/gpuprof
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GPUPROF_OUTPUT=$tmp/run "$B/examples/regions" >/dev/null 2>&1 || { fail "example runs"; exit 1; }
file=$(ls "$tmp"/run/*.gpuprof)

expect() { # what rc pattern-on-stderr cmd...
  local what=$1 rc=$2 pat=$3 got lines; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
  lines=$(wc -l <"$tmp/err")
  if [ "$got" -eq "$rc" ] && { [ -z "$pat" ] || { [ "$lines" -eq 1 ] && grep -qE "$pat" "$tmp/err"; }; }; then
    pass "$what"
  else
    fail "$what (exit $got, stderr: $(head -c 300 "$tmp/err"))"
  fi
}

expect "dump of a good file" 0 "" "$G" dump "$file"
grep -q '^thread 0 "main"' "$tmp/out" && grep -q 'generation 1 (final)' "$tmp/out" &&
  pass "dump shows threads and the final generation" || fail "dump content"
expect "report of a good directory" 0 "" "$G" report "$tmp/run"
expect "version" 0 "" "$G" --version
expect "usage error" 2 "" "$G" frobnicate
mkdir -p "$tmp/bad"
size=$(stat -c %s "$file")
head -c $((size / 2)) "$file" >"$tmp/bad/half.gpuprof"
expect "truncated file: dump" 1 "half\.gpuprof: truncated" "$G" dump "$tmp/bad/half.gpuprof"
expect "truncated file: report names it" 1 "half\.gpuprof: truncated" "$G" report "$tmp/bad"
cp "$file" "$tmp/bad/flip.gpuprof"
printf '\x55' | dd of="$tmp/bad/flip.gpuprof" bs=1 seek=$((size - 10)) conv=notrunc 2>/dev/null
expect "flipped byte: dump" 1 "flip\.gpuprof: .*checksum mismatch" "$G" dump "$tmp/bad/flip.gpuprof"
echo "hello" >"$tmp/bad/text.gpuprof"
expect "not a profile" 1 "text\.gpuprof: truncated" "$G" dump "$tmp/bad/text.gpuprof"
expect "missing file" 1 "nope\.gpuprof: cannot open: No such file" "$G" dump "$tmp/nope.gpuprof"
mkdir -p "$tmp/empty"
expect "directory without profiles" 1 "empty: no profiles" "$G" report "$tmp/empty"
expect "missing directory" 1 "absent: No such file" "$G" report "$tmp/absent"
[ "$fails" -eq 0 ]
