#!/usr/bin/env bash
# The PAPI backend end to end (lib/backends/papi; doc/BACKENDS.md, "PAPI"),
# on the unmodified regions example (3 worker threads, nested regions):
#  - GPUPROF_BACKENDS=papi with perf::TASK-CLOCK and perf::PAGE-FAULTS: the
#    profile carries papi.perf.task_clock on the regions of every thread;
#    `gpuprof report` shows both metrics by name, the database's inclusive
#    value at each thread's root is the sum of that thread's exclusive ones;
#  - an unknown event is one line naming it, the other is still counted;
#  - libpapi missing (GPUPROF_PAPI_LIBRARY), no event countable, an empty
#    list: one line saying the backend is unavailable and why, and the
#    program's output and exit status are those of an unmeasured run.
# Skipped (PASS with a note) when this build has no PAPI backend.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
G=$B/bin/gpuprof
R=$B/examples/regions
if ! grep -q 'GPUPROF_BUILTIN(papi)' "$B/gen/backends.h" 2>/dev/null; then
  pass "no PAPI backend in this build (papi.h not found): skipped"; exit 0
fi
EV='perf::TASK-CLOCK,perf::PAGE-FAULTS'
# run NAME [VAR=VALUE...]: the regions example measured into $tmp/NAME.
run() {
  local name=$1; shift
  env GPUPROF_OUTPUT="$tmp/$name" "$@" "$R" >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
  sed -i 's/-p[0-9]*\.gpuprof/-pPID.gpuprof/; s|'"$tmp/$name"'|OUT|' "$tmp/$name.out"
}
run base GPUPROF_BACKENDS=none
run papi GPUPROF_BACKENDS=papi GPUPROF_PAPI_EVENTS="$EV"
if [ "$(cat "$tmp/papi.rc")" = 0 ] && [ ! -s "$tmp/papi.err" ]; then
  pass "measured with papi: exit 0, nothing on stderr"
else
  fail "measured with papi: exit $(cat "$tmp/papi.rc"): $(cat "$tmp/papi.err")"
fi
"$G" dump "$tmp"/papi/*.gpuprof >"$tmp/dump" 2>&1
n=$(grep -cE '^ +smooth .*papi\.perf\.task_clock=' "$tmp/dump")
if [ "$n" = 3 ]; then pass "profile: region smooth of each of the 3 workers has papi.perf.task_clock"; else
  fail "profile: smooth with papi.perf.task_clock in $n threads: $(grep ' smooth ' "$tmp/dump")"; fi
"$G" report "$tmp/papi" >"$tmp/report" 2>&1
for m in 'papi.perf.task_clock (sum): [0-9]+ ns' 'papi.perf.page_faults \(sum\): [0-9]+'; do
  if grep -qE "^  ${m//(sum)/\\(sum\\)}\$" "$tmp/report"; then pass "report shows ${m%% *} by name"; else
    fail "report shows ${m%% *}: $(sed -n '/registered by backends/,$p' "$tmp/report")"; fi
done
"$G" analyze -o "$tmp/db" "$tmp/papi" >/dev/null 2>"$tmp/err" &&
  "$G" export --table -o "$tmp/t.csv" "$tmp/db" 2>>"$tmp/err" ||
  fail "analyze and export: $(cat "$tmp/err")"
# Per thread: the root's inclusive value = the sum of the exclusive values.
for m in papi.perf.task_clock papi.perf.page_faults; do
  bad=$(awk -F, -v m="$m" '
    NR == 1 { for (i = 1; i <= NF; i++) { if ($i == m) e = i; if ($i == m " (inc)") c = i; if ($i == "tid") t = i } next }
    { s[$t] += $e } $3 == "root" { inc[$t] = $c }
    END { if (!e || !c) print "no column"; for (k in inc) { all += s[k]; if (inc[k] != s[k]) print k ": " inc[k] " vs " s[k] }
          if (all == 0) print "no value at all" }' "$tmp/t.csv")
  if [ -z "$bad" ]; then pass "database: $m at each thread's root is the sum of its exclusive values"; else
    fail "database: $m inclusive at the root: $bad"; fi
done

run unknown GPUPROF_BACKENDS=papi GPUPROF_PAPI_EVENTS="perf::NO-SUCH-EVENT,perf::TASK-CLOCK"
if [ "$(wc -l <"$tmp/unknown.err")" = 1 ] &&
   grep -qF 'gpuprof: papi: event perf::NO-SUCH-EVENT is unknown to this PAPI' "$tmp/unknown.err"; then
  pass "an unknown event is one line naming it"
else
  fail "an unknown event is one line naming it: $(cat "$tmp/unknown.err")"
fi
"$G" dump "$tmp"/unknown/*.gpuprof >"$tmp/dump2" 2>&1
if grep -qE '^ +smooth .*papi\.perf\.task_clock=' "$tmp/dump2"; then
  pass "the other event is still counted"; else fail "the other event is still counted"; fi

# unchanged NAME LINES WHY VAR=VALUE...: LINES lines on stderr, the last
# "backend papi unavailable: WHY", the program's output and status those of
# the unmeasured run.
unchanged() {
  local name=$1 lines=$2 why=$3; shift 3
  run "$name" GPUPROF_BACKENDS=papi "$@"
  if [ "$(wc -l <"$tmp/$name.err")" = "$lines" ] &&
     tail -n 1 "$tmp/$name.err" | grep -qF "gpuprof: backend papi unavailable: $why"; then
    pass "$name: backend papi unavailable: $why"
  else
    fail "$name: $lines line(s), the last: backend papi unavailable: $why: $(cat "$tmp/$name.err")"
  fi
  if cmp -s "$tmp/base.out" "$tmp/$name.out" && [ "$(cat "$tmp/$name.rc")" = "$(cat "$tmp/base.rc")" ]; then
    pass "$name: the program's output and exit status are unchanged"
  else
    fail "$name: the program's output and exit status are unchanged: $(diff "$tmp/base.out" "$tmp/$name.out")"
  fi
}
unchanged nolib 1 "GPUPROF_PAPI_LIBRARY=$tmp/none/libpapi.so.7.0 cannot be loaded" \
  GPUPROF_PAPI_LIBRARY="$tmp/none/libpapi.so.7.0" GPUPROF_PAPI_EVENTS="$EV"
unchanged noevent 3 "none of the events of GPUPROF_PAPI_EVENTS=bogus::X,PAPI_TOT_INS can be counted" \
  GPUPROF_PAPI_EVENTS="bogus::X,PAPI_TOT_INS"
grep -qF 'papi: event bogus::X is unknown to this PAPI' "$tmp/noevent.err" &&
  grep -qF 'papi: event PAPI_TOT_INS cannot be counted here (Event does not exist)' "$tmp/noevent.err" &&
  pass "noevent: each event is named" || fail "noevent: each event is named: $(cat "$tmp/noevent.err")"
unchanged empty 1 "GPUPROF_PAPI_EVENTS=, names no event" GPUPROF_PAPI_EVENTS=","
unchanged unset 1 "GPUPROF_PAPI_EVENTS is not set"
[ "$fails" -eq 0 ]
