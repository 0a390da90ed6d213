#!/usr/bin/env bash
# The analysis under faults and odd inputs, end to end with the real
# library (issue 18): threads merged past GPUPROF_KEEP_THREADS keep their
# traces, attributed to the merged profile, and the database stays
# readable; a flipped byte in a trace is said by analyze as dump says it,
# counted in the database (report says so), refused with --strict; an
# empty trace likewise; a trace of another process is refused naming it;
# files of two databases of the same program are refused naming the file;
# FIFOs where files belong are refused at once (under `timeout`, so a
# regression fails rather than hangs).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
G=$B/bin/gpuprof
if [ ! -x "$B/tests/sim_demo" ] || [ ! -x "$G" ] || [ ! -x "$B/examples/regions" ]; then
  fail "$B/tests/sim_demo, $B/examples/regions and $G are built (run make tests first)"
  exit 1
fi
T="timeout 20"

# 1. Merged threads: regions has three workers; with GPUPROF_KEEP_THREADS=1
# the first to exit is kept, the other two are summed into "exited threads
# (merged)". Each worker closes 1160 regions, main 2.
GPUPROF_OUTPUT=$tmp/reg GPUPROF_TRACE=1 GPUPROF_KEEP_THREADS=1 \
  "$B/examples/regions" >/dev/null 2>&1 || fail "regions runs"
$T "$G" analyze -o "$tmp/regdb" "$tmp/reg" >/dev/null 2>"$tmp/err" &&
  [ ! -s "$tmp/err" ] && pass "merged threads: analyze, no warning" ||
  fail "merged threads: analyze ($(cat "$tmp/err"))"
$T "$G" report --trace "$tmp/regdb" >"$tmp/tr" 2>"$tmp/err" &&
  pass "merged threads: report --trace reads trace.db" ||
  fail "merged threads: report --trace ($(cat "$tmp/err"))"
n=$(grep -cE '^stream [0-9]+: process 0, thread [0-9]+ "exited threads \(merged\)", regions: 1160 records' "$tmp/tr")
[ "$n" = 2 ] && pass "merged threads: their two region streams are the merged profile's" ||
  { fail "merged threads: two streams of the merged profile (found $n)"; cat "$tmp/tr"; }
n=$(grep -cE '^stream [0-9]+: process 0, thread [0-9]+ "worker-[0-2]", regions: 1160 records' "$tmp/tr")
[ "$n" = 1 ] && pass "merged threads: the kept worker's stream is its own" ||
  fail "merged threads: the kept worker's stream (found $n)"
# Their records keep their contexts (the trace's MERGED chunks): every
# stream of a worker shows the worker's 1000 exchanges and 100 smooths.
n=$(grep -cE '^ +1000  exchange$' "$tmp/tr")
m=$(grep -cE '^ +100  smooth$' "$tmp/tr")
[ "$n" = 3 ] && [ "$m" = 3 ] && ! grep -q 'unknown context' "$tmp/tr" &&
  pass "merged threads: their records keep their contexts" ||
  { fail "merged threads: their records keep their contexts ($n, $m)"; cat "$tmp/tr"; }
"$G" dump "$(ls "$tmp"/reg/*.gptrace)" | grep -q '^merged     2 threads summed into the merged state' &&
  pass "merged threads: dump shows the two node maps" || fail "merged threads: dump shows the node maps"
for e in --hatchet --table; do
  $T "$G" export $e -o "$tmp/x" "$tmp/regdb" 2>"$tmp/err" &&
    pass "merged threads: export $e" || fail "merged threads: export $e ($(cat "$tmp/err"))"
done

# 2. A flipped byte in the middle of a trace.
GPUPROF_OUTPUT=$tmp/a GPUPROF_TRACE=1 "$B/tests/sim_demo" >/dev/null 2>&1 ||
  fail "sim_demo runs"
cp -r "$tmp/a" "$tmp/flip"
tr=$(ls "$tmp"/flip/*.gptrace)
size=$(stat -c %s "$tr")
at=$((size / 2))
old=$(od -An -tu1 -j "$at" -N 1 "$tr" | tr -d ' ')
printf "\\$(printf '%03o' $((old ^ 1)))" | dd of="$tr" bs=1 seek="$at" conv=notrunc 2>/dev/null
said=$("$G" dump "$tr" | sed -n 's/^ignored *\([0-9]*\) bytes.*/\1/p')
[ -n "$said" ] && [ "$said" -gt 0 ] && pass "dump says $said bytes are ignored" ||
  fail "dump says how many bytes are ignored"
$T "$G" analyze -o "$tmp/flipdb" "$tmp/flip" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 0 ] && grep -qF "gpuprof: $tr: ignored $said bytes at the end (" "$tmp/err" &&
  pass "analyze says the same on stderr, exit 0" ||
  fail "analyze says the same on stderr (exit $rc: $(cat "$tmp/err"))"
$T "$G" report "$tmp/flipdb" >/dev/null 2>"$tmp/err" &&
  grep -qF "traces were used in part: 1 damaged or empty ($said bytes ignored)" "$tmp/err" &&
  pass "report says the database holds a damaged trace" ||
  fail "report says the database holds a damaged trace ($(cat "$tmp/err"))"
$T "$G" analyze --strict -o "$tmp/strictdb" "$tmp/flip" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && grep -qF "$tr: damaged" "$tmp/err" && [ ! -e "$tmp/strictdb" ] &&
  pass "--strict: refused, exit 1, nothing written" ||
  fail "--strict refuses (exit $rc, $(cat "$tmp/err"))"
$T "$G" analyze --strict -o "$tmp/okdb" "$tmp/a" >/dev/null 2>&1 &&
  pass "--strict takes an undamaged trace" || fail "--strict takes an undamaged trace"
: >"$tr"
$T "$G" analyze -o "$tmp/emptydb" "$tmp/flip" >/dev/null 2>"$tmp/err" &&
  grep -qF "$tr: ignored 0 bytes: empty" "$tmp/err" &&
  pass "an empty trace is said" || fail "an empty trace is said ($(cat "$tmp/err"))"
$T "$G" analyze --strict -o "$tmp/strictdb" "$tmp/flip" >/dev/null 2>&1
[ $? = 1 ] && pass "--strict refuses an empty trace" || fail "--strict refuses an empty trace"

# 3. Two runs of one program: a trace of the other process, and files of
# the other database.
GPUPROF_OUTPUT=$tmp/b GPUPROF_TRACE=1 "$B/tests/sim_demo" >/dev/null 2>&1 ||
  fail "sim_demo runs again"
$T "$G" analyze -o "$tmp/dba" "$tmp/a" >/dev/null 2>&1 &&
  $T "$G" analyze -o "$tmp/dbb" "$tmp/b" >/dev/null 2>&1 ||
  fail "both runs analyzed"
cp -r "$tmp/a" "$tmp/other"
ta=$(ls "$tmp"/other/*.gptrace)
cp "$(ls "$tmp"/b/*.gptrace)" "$ta"
$T "$G" analyze -o "$tmp/otherdb" "$tmp/other" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && grep -qF "$ta: written by process" "$tmp/err" &&
  grep -q "a trace of another process" "$tmp/err" &&
  pass "a trace of another process is refused naming it" ||
  fail "a trace of another process is refused (exit $rc: $(cat "$tmp/err"))"
for f in meta.db profile.db cct.db stats.db trace.db; do
  cp -r "$tmp/dba" "$tmp/mix"
  cp "$tmp/dbb/$f" "$tmp/mix/$f"
  $T "$G" report "$tmp/mix" >/dev/null 2>"$tmp/err"
  rc=$?
  if [ "$f" = meta.db ]; then want=profile.db; else want=$f; fi
  [ $rc = 1 ] && grep -qF "$tmp/mix/$want: written by another analysis than meta.db" "$tmp/err" &&
    pass "$f of another analysis: refused, naming $want" ||
    fail "$f of another analysis (exit $rc: $(cat "$tmp/err"))"
  rm -rf "$tmp/mix"
done

# 4. FIFOs: as a profile (dump, report, analyze), as a database file, as a
# trace.
mkdir "$tmp/fifo"
mkfifo "$tmp/fifo/x.gpuprof"
for cmd in "dump $tmp/fifo/x.gpuprof" "report $tmp/fifo" "analyze -o $tmp/fifodb $tmp/fifo"; do
  $T "$G" $cmd >/dev/null 2>"$tmp/err"
  rc=$?
  [ $rc = 1 ] && grep -qF "$tmp/fifo/x.gpuprof: not a regular file (a FIFO)" "$tmp/err" &&
    pass "a FIFO profile: ${cmd%% *} refuses it at once" ||
    fail "a FIFO profile: ${cmd%% *} (exit $rc: $(cat "$tmp/err"))"
done
cp -r "$tmp/dba" "$tmp/fdb"
rm "$tmp/fdb/cct.db" && mkfifo "$tmp/fdb/cct.db"
$T "$G" report "$tmp/fdb" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && grep -qF "$tmp/fdb/cct.db: not a regular file (a FIFO)" "$tmp/err" &&
  pass "a FIFO in place of cct.db: refused" || fail "a FIFO cct.db (exit $rc: $(cat "$tmp/err"))"
cp -r "$tmp/a" "$tmp/ft"
ft=$(ls "$tmp"/ft/*.gptrace)
rm "$ft" && mkfifo "$ft"
$T "$G" analyze -o "$tmp/ftdb" "$tmp/ft" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && grep -qF "$ft: not a regular file (a FIFO)" "$tmp/err" &&
  pass "a FIFO trace: refused" || fail "a FIFO trace (exit $rc: $(cat "$tmp/err"))"
$T "$G" dump "$ft" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -qF "not a regular file" "$tmp/err" &&
  pass "a FIFO trace: dump refuses it" || fail "a FIFO trace: dump ($(cat "$tmp/err"))"
[ "$fails" -eq 0 ]
