#!/usr/bin/env bash
# The gpuprof command as a user meets it: the exact report of a run with
# known values (two processes, three threads each, written by
# $B/tests/check_an_report --write-fixtures; the expected table was worked
# out by hand and lives in that suite), dump and report of a real run, and
# for damaged or missing input one line on stderr naming the file and what
# is wrong, with exit status 1; bad usage: one line saying what is wrong and
# "try 'gpuprof CMD --help'", exit status 2. The command-line conventions:
# every command's --help and -h (stdout, 0), help [CMD], --version, an
# unknown command, a measurement directory given for a database and the
# reverse named as such, project with a speedup that matches nothing.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$B/bin/gpuprof
FIX=$B/tests/check_an_report
SIM=$B/tests/sim_demo
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -x "$G" ] || [ ! -x "$FIX" ] || [ ! -x "$SIM" ]; then
  fail "$G, $FIX and $SIM are built (make analysis tests)"
  exit 1
fi

# --- a run with known values ---------------------------------------------
mkdir -p "$tmp/known"
if "$FIX" --write-fixtures "$tmp/known" && "$FIX" --expected-report >"$tmp/known.want"; then
  pass "fixtures written"
else
  fail "fixtures written"
fi
if "$G" report "$tmp/known" >"$tmp/known.out" 2>"$tmp/known.err" && [ ! -s "$tmp/known.err" ] &&
   [ "$(head -n 1 "$tmp/known.out")" = "gpuprof report $tmp/known" ] &&
   tail -n +2 "$tmp/known.out" | diff -u "$tmp/known.want" - >"$tmp/known.diff"; then
  pass "report of two processes x three threads is exactly the expected table"
else
  fail "report of two processes x three threads is exactly the expected table"
  cat "$tmp/known.err" "$tmp/known.diff" 2>/dev/null
fi
# Reading the same files in any directory order gives the same text.
mkdir -p "$tmp/known2"
cp "$tmp/known/beta-r1-p200.gpuprof" "$tmp/known2/" && cp "$tmp/known/alpha-r0-p100.gpuprof" "$tmp/known2/"
if "$G" report "$tmp/known2" | tail -n +2 | cmp -s - "$tmp/known.want"; then
  pass "report is independent of the directory order"
else
  fail "report is independent of the directory order"
fi
kfile=$tmp/known/alpha-r0-p100.gpuprof
if "$G" dump "$kfile" >"$tmp/kdump" 2>&1 &&
   grep -qx 'host       alpha  pid 100  rank 0' "$tmp/kdump" &&
   grep -qx '    compute region.visits=10 region.time.incl=5.000 ms region.time.excl=5.000 ms' "$tmp/kdump" &&
   [ "$(grep -c '^thread ' "$tmp/kdump")" -eq 3 ]; then
  pass "dump of a known file: identity, three threads, indented tree with times"
else
  fail "dump of a known file"; head -n 30 "$tmp/kdump"
fi
mkdir -p "$tmp/kbad"
cp "$tmp/known/beta-r1-p200.gpuprof" "$tmp/kbad/"
ksize=$(stat -c %s "$kfile")
head -c $((ksize - 7)) "$kfile" >"$tmp/kbad/alpha-r0-p100.gpuprof"
"$G" report "$tmp/kbad" >"$tmp/kbad.out" 2>"$tmp/kbad.err"
rc=$?
if [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/kbad.err")" -eq 1 ] &&
   grep -qE "^gpuprof: $tmp/kbad/alpha-r0-p100\.gpuprof: " "$tmp/kbad.err" && [ ! -s "$tmp/kbad.out" ]; then
  pass "one truncated file fails the report: exit 1, one line naming it"
else
  fail "one truncated file fails the report (exit $rc): $(cat "$tmp/kbad.err")"
fi

# --- a real run ----------------------------------------------------------
if ! GPUPROF_OUTPUT=$tmp/run "$B/examples/regions" >/dev/null 2>&1; then
  fail "example $B/examples/regions runs"
  exit 1
fi
file=$(ls "$tmp"/run/*.gpuprof)

# The expected exit status and, when a pattern is given, stderr: one line
# that matches it; for bad usage (2) a second line pointing to the usage.
expect() { # what rc pattern-on-stderr cmd...
  local what=$1 rc=$2 pat=$3 got lines want=1; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
  lines=$(wc -l <"$tmp/err")
  [ "$rc" -eq 2 ] && want=2
  if [ "$got" -eq "$rc" ] && { [ -z "$pat" ] || { [ "$lines" -eq $want ] && head -n 1 "$tmp/err" | grep -qE -- "$pat" &&
       { [ $want = 1 ] || sed -n 2p "$tmp/err" | grep -qE "^try 'gpuprof [a-z]+( --help)?'$"; }; }; }; then
    pass "$what"
  else
    fail "$what (exit $got, stderr: $(head -c 300 "$tmp/err"))"
  fi
}

expect "dump of a good file" 0 "" "$G" dump "$file"
grep -q '^thread 0 "main"' "$tmp/out" && grep -q 'generation 1 (final)' "$tmp/out" &&
  pass "dump shows threads and the final generation" || fail "dump content"
expect "report of a good directory" 0 "" "$G" report "$tmp/run"
ver() { sed -n "s/^#define GPUPROF_VERSION_$1 \([0-9]*\).*/\1/p" include/gpuprof.h; }
expect "version" 0 "" "$G" --version
[ "$(cat "$tmp/out")" = "gpuprof $(ver MAJOR).$(ver MINOR).$(ver PATCH)" ] &&
  pass "--version: the header's version" || fail "--version: $(cat "$tmp/out")"
mkdir -p "$tmp/bad"
size=$(stat -c %s "$file")
head -c $((size / 2)) "$file" >"$tmp/bad/half.gpuprof"
expect "truncated file: dump" 1 "half\.gpuprof: truncated" "$G" dump "$tmp/bad/half.gpuprof"
expect "truncated file: report names it" 1 "half\.gpuprof: truncated" "$G" report "$tmp/bad"
cp "$file" "$tmp/bad/flip.gpuprof"
# Complement one byte (writing a fixed one is no change when it was there).
old=$(od -An -tu1 -j $((size - 10)) -N1 "$file" | tr -d ' ')
printf "\\$(printf '%03o' $((old ^ 255)))" | dd of="$tmp/bad/flip.gpuprof" bs=1 seek=$((size - 10)) conv=notrunc 2>/dev/null
expect "flipped byte: dump" 1 "flip\.gpuprof: .*checksum mismatch" "$G" dump "$tmp/bad/flip.gpuprof"
echo "hello" >"$tmp/bad/text.gpuprof"
expect "not a profile" 1 "text\.gpuprof: truncated" "$G" dump "$tmp/bad/text.gpuprof"
expect "missing file" 1 "nope\.gpuprof: cannot open: No such file" "$G" dump "$tmp/nope.gpuprof"
mkdir -p "$tmp/empty"
expect "directory without profiles" 1 "empty: no profiles" "$G" report "$tmp/empty"
expect "missing directory" 1 "absent: No such file" "$G" report "$tmp/absent"

# --- analyze: measurements -> database ----------------------------------
expect "analyze a good directory" 0 "" "$G" analyze -j 2 -o "$tmp/db" "$tmp/run"
grep -qx "gpuprof: database written to $tmp/db" "$tmp/out" &&
  [ -s "$tmp/db/meta.db" ] && [ -s "$tmp/db/profile.db" ] && [ -s "$tmp/db/cct.db" ] &&
  [ -s "$tmp/db/stats.db" ] && pass "analyze writes the four database files" ||
  fail "analyze writes the four database files"
Gabs=$(realpath "$G")
( cd "$tmp" && "$Gabs" analyze run/ >/dev/null 2>&1 ) && [ -s "$tmp/run-database/meta.db" ] &&
  pass "analyze: default output DIR-database" || fail "analyze: default output DIR-database"
expect "analyze: damaged input names the first damaged file" 1 "bad/flip\.gpuprof: .*checksum mismatch" "$G" analyze -o "$tmp/db2" "$tmp/bad"
[ ! -e "$tmp/db2/meta.db" ] && pass "analyze: nothing written on error" || fail "analyze: nothing written on error"
expect "analyze: missing directory" 1 "absent: No such file" "$G" analyze "$tmp/absent"
expect "analyze: bad -j" 2 "" "$G" analyze -j 0 "$tmp/run"
expect "analyze: bad -jN" 2 "" "$G" analyze -j2x "$tmp/run"
# -jN, and no -j at all (a thread per CPU): the same bytes as -j 2.
expect "analyze -j1 (attached)" 0 "" "$G" analyze -j1 -o "$tmp/db5" "$tmp/run"
expect "analyze without -j" 0 "" "$G" analyze -o "$tmp/db6" "$tmp/run"
same=1
for f in meta profile cct stats; do
  cmp -s "$tmp/db/$f.db" "$tmp/db5/$f.db" && cmp -s "$tmp/db/$f.db" "$tmp/db6/$f.db" || same=0
done
[ $same = 1 ] && pass "analyze: -j1 and the default -j give the same database" ||
  fail "analyze: -j1 and the default -j give the same database"
expect "analyze: no input" 2 "" "$G" analyze -o "$tmp/db3"
: >"$tmp/afile"
expect "analyze: output is a file" 1 "afile: exists and is not a directory" "$G" analyze -o "$tmp/afile" "$tmp/run"
expect "analyze: output's parent missing" 1 "nowhere/db: cannot create: .*nowhere: No such file" "$G" analyze -o "$tmp/nowhere/db" "$tmp/run"
expect "analyze --memory 16M" 0 "" "$G" analyze -j 2 --memory 16M -o "$tmp/db4" "$tmp/run"
same=1
for f in meta profile cct stats; do cmp -s "$tmp/db/$f.db" "$tmp/db4/$f.db" || same=0; done
[ "$same" = 1 ] && [ -z "$(ls -A "$tmp/db4" | grep -v '^[a-z]*\.db$')" ] &&
  pass "analyze --memory: the same bytes, no temporary file left" ||
  fail "analyze --memory: the same bytes, no temporary file left"
expect "analyze: bad --memory" 2 "" "$G" analyze --memory 12Q "$tmp/run"
expect "analyze: --memory below the minimum" 1 "at least 16 MiB" "$G" analyze --memory 1M "$tmp/run"
expect "report of a database" 0 "" "$G" report --metric region.visits --threshold 0 "$tmp/db"
head -n 1 "$tmp/out" | grep -q '^top-down view over [0-9]* profiles, by inclusive region.visits; the whole: region.visits [0-9]*;' &&
  pass "report of a database: a top-down view of the metric" ||
  fail "report of a database: a top-down view of the metric"
expect "export --folded" 0 "" "$G" export --folded --metric region.visits "$tmp/db"
whole=$(head -n 1 "$tmp/out" >/dev/null; "$G" report --metric region.visits --threshold 0 "$tmp/db" | head -n 1 | sed 's/.*the whole: region.visits \([0-9]*\);.*/\1/')
"$G" export --folded --metric region.visits "$tmp/db" | awk -v w="$whole" '{ s += $NF } END { exit !(s == w && NR > 0) }' &&
  pass "folded stacks re-sum to the whole ($whole)" || fail "folded stacks re-sum to the whole ($whole)"
expect "report: unknown metric" 1 "no metric named 'nope'" "$G" report --metric nope "$tmp/db"
expect "report --view flat" 0 "" "$G" report --view flat --metric region.visits "$tmp/db"
grep -q '^flat view over' "$tmp/out" && pass "report --view flat: its header" || fail "report --view flat: its header"
expect "report --view bottom-up with a derived metric" 0 "" "$G" report --view bottom-up --depth 2 --metric region.visits --derive 'per_visit=region.time.incl / region.visits' --metric per_visit "$tmp/db"
head -n 1 "$tmp/out" | grep -qE '^bottom-up view .*, per_visit [0-9.]+;' &&
  pass "bottom-up: the derived metric over the whole" || fail "bottom-up: the derived metric over the whole"
expect "report --derive: a syntax error names the offset" 1 "formula 'region.visits \*': .* at offset 15" "$G" report --derive 'x=region.visits *' "$tmp/db"
expect "report --derive without a name" 2 "NAME=FORMULA" "$G" report --derive '=1' "$tmp/db"
expect "report --context: one context in every profile" 0 "" "$G" report --context 1 --metric region.visits "$tmp/db"
grep -q '^context 1: ' "$tmp/out" && pass "report --context: its header" || fail "report --context: its header"
expect "report --context out of range" 1 "no context 99999" "$G" report --context 99999 "$tmp/db"
expect "report --view unknown" 2 "top-down, bottom-up or flat" "$G" report --view sideways "$tmp/db"
cp -r "$tmp/db" "$tmp/dbx" && head -c -10 "$tmp/db/cct.db" >"$tmp/dbx/cct.db"
expect "export: damaged database names the file" 1 "dbx/cct\.db: truncated" "$G" export --folded "$tmp/dbx"

# --- command-line conventions ------------------------------------------------
# Every command's usage on stdout, exit 0, through --help, -h and help CMD.
for cmd in dump report export analyze project advise run help; do
  ok=1
  for how in "$cmd --help" "$cmd -h" "help $cmd"; do
    # shellcheck disable=SC2086 # the words of $how on purpose
    "$G" $how >"$tmp/h.out" 2>"$tmp/h.err"
    rc=$?
    if [ $rc -ne 0 ] || [ -s "$tmp/h.err" ] || ! head -n 1 "$tmp/h.out" | grep -q "^usage: gpuprof $cmd"; then
      ok=0; fail "gpuprof $how: exit $rc, $(head -n 1 "$tmp/h.out") $(head -c 200 "$tmp/h.err")"
    fi
  done
  [ "$("$G" "$cmd" --help)" = "$("$G" help "$cmd")" ] || { ok=0; fail "$cmd --help and help $cmd differ"; }
  [ $ok = 1 ] && pass "gpuprof $cmd --help, -h, help $cmd: its usage on stdout, exit 0"
done
# --help wherever it stands among a command's options and operands.
expect "report --metric x DB --help" 0 "" "$G" report --metric region.visits "$tmp/db" --help
head -n 1 "$tmp/out" | grep -q '^usage: gpuprof report' && pass "--help after operands: the usage" ||
  fail "--help after operands: $(head -n 1 "$tmp/out")"
# run: --help is run's own only before PROGRAM; after it, the program's.
"$G" run -o "$tmp/rh" "$B/tests/run_plain" 0 --help </dev/null >"$tmp/rh.out" 2>&1
rc=$?
[ $rc -eq 0 ] && ! grep -q usage "$tmp/rh.out" && ls "$tmp/rh"/*.gpuprof >/dev/null 2>&1 &&
  pass "run PROGRAM --help: the program gets --help" || fail "run PROGRAM --help (exit $rc)"
expect "help: the overview" 0 "" "$G" help
for cmd in dump report export analyze project advise run "--version"; do
  grep -q "^ *\\(usage: \\)\\?gpuprof $cmd" "$tmp/out" || fail "help lists $cmd"
done
grep -q '^Exit status: 0 done; 1 the input cannot be used' "$tmp/out" &&
  pass "help: every command and the exit status" || fail "help: the exit status"
expect "no command: the overview on stderr, exit 2" 2 "" "$G"
grep -q '^usage: gpuprof dump' "$tmp/err" && pass "no command: usage" || fail "no command: usage"
expect "unknown command" 2 "^gpuprof: unknown command 'bogus'$" "$G" bogus
expect "help of an unknown command" 2 "^gpuprof: unknown command 'bogus'$" "$G" help bogus
expect "unknown option of a command" 2 "^gpuprof: unknown option --bogus$" "$G" report --bogus "$tmp/db"
grep -qx "try 'gpuprof report --help'" "$tmp/err" && pass "an unknown option points to report --help" ||
  fail "an unknown option points to report --help"
expect "an option without its value" 2 "^gpuprof: --metric wants a value$" "$G" report "$tmp/db" --metric
expect "report without a database" 2 "report wants an analysis database" "$G" report --importance
expect "conflicting options" 2 "--trace and --context exclude each other" "$G" report --trace --context 1 "$tmp/db"
expect "two export formats" 2 "export: --folded and --chrome exclude each other" "$G" export --folded --chrome "$tmp/db"
expect "export without a format" 2 "export wants a format" "$G" export "$tmp/db"
expect "the format after other options" 0 "" "$G" export --metric region.visits --folded "$tmp/db"
expect "analyze: unknown option" 2 "analyze: unknown option --bogus" "$G" analyze --bogus "$tmp/run"
expect "advise: unknown option" 2 "^gpuprof: unknown option --bogus$" "$G" advise --bogus "$tmp/db"
expect "dump: two files" 2 "dump wants one profile" "$G" dump "$file" "$file"
expect "export --chrome: unknown option" 2 "export --chrome: unknown option --bogus" "$G" export --chrome --bogus "$tmp/run"

# A measurement directory where a database is expected, and the reverse.
mdir="is a measurement directory, not an analysis database: run 'gpuprof analyze -o DB $tmp/run' first$"
expect "report --metric on a measurement directory" 1 "^gpuprof: $tmp/run $mdir" "$G" report --metric region.visits "$tmp/run"
expect "export --hatchet on a measurement directory" 1 "^gpuprof: $tmp/run $mdir" "$G" export --hatchet "$tmp/run"
expect "export --otf2 on a measurement directory" 1 "^gpuprof: $tmp/run $mdir" "$G" export --otf2 -o "$tmp/o2" "$tmp/run"
expect "advise on a measurement directory" 1 "^gpuprof: $tmp/run $mdir" "$G" advise "$tmp/run"
expect "project on a measurement directory" 1 "^gpuprof: $tmp/run $mdir" "$G" project --speedup kernel:k=2 "$tmp/run"
expect "analyze on a database" 1 "^gpuprof: $tmp/db is an analysis database, not a measurement directory" "$G" analyze -o "$tmp/db7" "$tmp/db"
expect "dump of a database" 1 "^gpuprof: $tmp/db is an analysis database; dump reads one profile" "$G" dump "$tmp/db"
expect "a directory that is neither" 1 "^gpuprof: $tmp/empty is not an analysis database" "$G" report --metric x "$tmp/empty"

# A traced run (the sim backend): export --chrome of its database names it
# as one instead of asking for GPUPROF_TRACE=1; project with a speedup that
# matches nothing exits 1 naming it, and prints no projection.
if GPUPROF_OUTPUT=$tmp/tr GPUPROF_BACKENDS=sim GPUPROF_TRACE=1 "$SIM" >/dev/null 2>&1 &&
   "$G" analyze -j 1 -o "$tmp/trdb" "$tmp/tr" >/dev/null 2>&1; then
  expect "export --chrome on a traced database" 1 "^gpuprof: $tmp/trdb is an analysis database; the Chrome export reads the measurement directories it was made from" "$G" export --chrome "$tmp/trdb"
  grep -q GPUPROF_TRACE "$tmp/err" && fail "export --chrome DB asks for GPUPROF_TRACE=1"
  expect "export --chrome on its measurement directory" 0 "" "$G" export --chrome -o "$tmp/tr.json" "$tmp/tr"
  expect "project: a speedup that matches nothing" 1 "^gpuprof: project: --speedup kernel:nothing=2 matches no activity of the trace$" "$G" project --speedup kernel:nothing=2 "$tmp/trdb"
  [ ! -s "$tmp/out" ] && pass "project: no projection when nothing matched" || fail "project printed: $(head -n 2 "$tmp/out")"
  expect "project: one of two speedups matches nothing" 1 "^gpuprof: project: --speedup region:nowhere=3 matches no activity of the trace$" "$G" project --speedup kernel:stencil=2 --speedup region:nowhere=3 "$tmp/trdb"
  expect "project: a speedup that matches" 0 "" "$G" project --speedup kernel:stencil=2 "$tmp/trdb"
  head -n 1 "$tmp/out" | grep -q '^projection, process 0: run ' && pass "project: the projection" ||
    fail "project: $(head -n 1 "$tmp/out")"
else
  fail "sim_demo traced and analysed"
fi
[ "$fails" -eq 0 ]
