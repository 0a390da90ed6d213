#!/usr/bin/env bash
# The PAPI backend end to end (lib/backends/papi; doc/BACKENDS.md, "PAPI"),
# on the unmodified regions example (3 worker threads, nested regions), with
# two libpapis: the fake one of the test tree (tests/fakepapi/, through
# GPUPROF_PAPI_LIBRARY) everywhere, and the real one where it can count
# perf::TASK-CLOCK and perf::PAGE-FAULTS here (papi_probe says; "SKIP real
# libpapi: why" elsewhere, e.g. a VM without a PMU). With each:
#  - GPUPROF_BACKENDS=papi with perf::TASK-CLOCK and perf::PAGE-FAULTS: the
#    profile carries papi.perf.task_clock on the regions of every thread;
#    `gpuprof report` shows both metrics by name, the database's inclusive
#    value at each thread's root is the sum of that thread's exclusive ones;
#  - an unknown event is one line naming it, the other is still counted;
#  - no event countable: one line each, one saying the backend is
#    unavailable, and the program's output and exit status are those of an
#    unmeasured run.
# On the fake, exactly: fake::READS counts one per interval the backend
# gives away, so each region's exclusive value is its visits plus its
# children's visits (an interval starts at each entry and at each child's
# end). Without a library: libpapi missing, an empty list, no list.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
G=$B/bin/gpuprof
R=$B/examples/regions
if ! grep -q 'GPUPROF_BUILTIN(papi)' "$B/gen/backends.h" 2>/dev/null; then
  echo "SKIP no PAPI backend in this build (papi.h not found)"; exit 0
fi
for f in "$B/tests/libfakepapi.so" "$B/tests/papi_probe"; do
  [ -x "$f" ] || { fail "$f is not built (make tests)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
FAKE=$(cd "$B/tests" && pwd)/libfakepapi.so
EV='perf::TASK-CLOCK,perf::PAGE-FAULTS'
# run NAME [VAR=VALUE...]: the regions example measured into $tmp/NAME.
run() {
  local name=$1; shift
  env GPUPROF_OUTPUT="$tmp/$name" "$@" "$R" >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
  sed -i 's/-p[0-9]*\.gpuprof/-pPID.gpuprof/; s|'"$tmp/$name"'|OUT|' "$tmp/$name.out"
}
run base GPUPROF_BACKENDS=none

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

# measured L VAR=VALUE...: the profile, report and database of a run with
# libpapi L (fake or real; its variables after L).
measured() {
  local l=$1; shift
  run "$l" GPUPROF_BACKENDS=papi GPUPROF_PAPI_EVENTS="$EV" "$@"
  if [ "$(cat "$tmp/$l.rc")" = 0 ] && [ ! -s "$tmp/$l.err" ]; then
    pass "$l: measured with papi: exit 0, nothing on stderr"
  else
    fail "$l: measured with papi: exit $(cat "$tmp/$l.rc"): $(cat "$tmp/$l.err")"
  fi
  "$G" dump "$tmp/$l"/*.gpuprof >"$tmp/$l.dump" 2>&1
  local n m bad
  n=$(grep -cE '^ +smooth .*papi\.perf\.task_clock=' "$tmp/$l.dump")
  if [ "$n" = 3 ]; then pass "$l: profile: region smooth of each of the 3 workers has papi.perf.task_clock"; else
    fail "$l: profile: smooth with papi.perf.task_clock in $n threads: $(grep ' smooth ' "$tmp/$l.dump")"; fi
  "$G" report "$tmp/$l" >"$tmp/$l.report" 2>&1
  for m in 'papi.perf.task_clock (sum): [0-9]+ ns' 'papi.perf.page_faults \(sum\): [0-9]+'; do
    if grep -qE "^  ${m//(sum)/\\(sum\\)}\$" "$tmp/$l.report"; then pass "$l: report shows ${m%% *} by name"; else
      fail "$l: report shows ${m%% *}: $(sed -n '/registered by backends/,$p' "$tmp/$l.report")"; fi
  done
  "$G" analyze -o "$tmp/$l.db" "$tmp/$l" >/dev/null 2>"$tmp/err" &&
    "$G" export --table -o "$tmp/$l.csv" "$tmp/$l.db" 2>>"$tmp/err" ||
    fail "$l: analyze and export: $(cat "$tmp/err")"
  # Per thread: the root's inclusive value = the sum of the exclusive values.
  for m in papi.perf.task_clock papi.perf.page_faults; do
    bad=$(awk -F, -v m="$m" '
      NR == 1 { for (i = 1; i <= NF; i++) { if ($i == m) e = i; if ($i == m " (inc)") c = i; if ($i == "tid") t = i } next }
      { s[$t] += $e } $3 == "root" { inc[$t] = $c }
      END { if (!e || !c) print "no column"; for (k in inc) { all += s[k]; if (inc[k] != s[k]) print k ": " inc[k] " vs " s[k] }
            if (all == 0) print "no value at all" }' "$tmp/$l.csv")
    if [ -z "$bad" ]; then pass "$l: database: $m at each thread's root is the sum of its exclusive values"; else
      fail "$l: database: $m inclusive at the root: $bad"; fi
  done
}

# refused L VAR=VALUE...: events libpapi L does not know or cannot count.
refused() {
  local l=$1; shift
  run "$l-unknown" GPUPROF_BACKENDS=papi GPUPROF_PAPI_EVENTS="perf::NO-SUCH-EVENT,perf::TASK-CLOCK" "$@"
  if [ "$(wc -l <"$tmp/$l-unknown.err")" = 1 ] &&
     grep -qF 'gpuprof: papi: event perf::NO-SUCH-EVENT is unknown to this PAPI' "$tmp/$l-unknown.err"; then
    pass "$l: an unknown event is one line naming it"
  else
    fail "$l: an unknown event is one line naming it: $(cat "$tmp/$l-unknown.err")"
  fi
  "$G" dump "$tmp/$l-unknown"/*.gpuprof >"$tmp/$l-unknown.dump" 2>&1
  if grep -qE '^ +smooth .*papi\.perf\.task_clock=' "$tmp/$l-unknown.dump"; then
    pass "$l: the other event is still counted"; else fail "$l: the other event is still counted"; fi
  unchanged "$l-noevent" 3 "none of the events of GPUPROF_PAPI_EVENTS=bogus::X,PAPI_TOT_INS can be counted" \
    GPUPROF_PAPI_EVENTS="bogus::X,PAPI_TOT_INS" "$@"
  grep -qF 'papi: event bogus::X is unknown to this PAPI' "$tmp/$l-noevent.err" &&
    grep -qF 'papi: event PAPI_TOT_INS cannot be counted here (Event does not exist)' "$tmp/$l-noevent.err" &&
    pass "$l-noevent: each event is named" || fail "$l-noevent: each event is named: $(cat "$tmp/$l-noevent.err")"
}

# The fake, exactly: each region's fake::READS = its visits + its direct
# children's visits, in every thread ("region.visits=V ... reads=N" lines of
# the dump, nested by two spaces).
exact_intervals() {
  run fake-reads GPUPROF_BACKENDS=papi GPUPROF_PAPI_EVENTS=fake::READS GPUPROF_PAPI_LIBRARY="$FAKE"
  "$G" dump "$tmp/fake-reads"/*.gpuprof >"$tmp/fake-reads.dump" 2>&1
  local res
  res=$(awk '
    function close_to(d) { while (top > 0 && depth[top] >= d) { check(top); top-- } }
    function check(k) { n++; if (reads[k] != visits[k] + kids[k]) bad = bad " " name[k] ": " reads[k] " != " visits[k] "+" kids[k] }
    /^thread / { close_to(0); next }
    /region\.visits=/ {
      match($0, /^ */); d = RLENGTH / 2; close_to(d)
      v = $0; sub(/.*region\.visits=/, "", v); sub(/ .*/, "", v)
      r = $0; if (!sub(/.*papi\.fake\.reads=/, "", r)) r = 0; sub(/ .*/, "", r)
      if (top > 0) kids[top] += v
      top++; depth[top] = d; visits[top] = v; reads[top] = r; kids[top] = 0; name[top] = $1
    }
    END { close_to(0); print n bad }' "$tmp/fake-reads.dump")
  if [ "$res" = 20 ]; then
    pass "fake: every region's papi.fake.reads is its visits plus its children's (20 regions: 6 in each worker, 2 in main)"
  else
    fail "fake: papi.fake.reads = visits + children's visits: $res regions checked: $(grep -c . "$tmp/fake-reads.dump") lines"
  fi
}

# sampled L VAR=VALUE...: overflow samples of perf::TASK-CLOCK every 1 ms
# (GPUPROF_PAPI_SAMPLING) on tests/run/cpu_burn.c, a plain program that
# never calls the library: main burns 300 ms in burn_main, a thread it starts
# 150 ms in burn_thread; each function's papi.perf.task_clock.sampled within
# 20 % of what it burned (the thread is sampled from its start, through the
# observer's thread_start).
sampled() {
  local l=$1; shift
  local P=$B/tests/run_cpu_burn
  [ -x "$P" ] || { fail "$P is not built (make tests)"; return; }
  env GPUPROF_BACKENDS=papi GPUPROF_CPU_SAMPLING=off \
    GPUPROF_PAPI_SAMPLING=perf::TASK-CLOCK@1000000 "$@" \
    "$G" run -o "$tmp/$l-sampled" "$P" burn >"$tmp/$l-sampled.out" 2>"$tmp/$l-sampled.err" &&
    "$G" analyze -o "$tmp/$l-sampled.db" "$tmp/$l-sampled" >/dev/null 2>>"$tmp/$l-sampled.err" ||
    { fail "$l: sampled run: $(cat "$tmp/$l-sampled.err")"; return; }
  local f want got
  for f in burn_main:300 burn_thread:150; do
    want=${f#*:}
    got=$("$G" report --view flat --metric papi.perf.task_clock.sampled --threshold 0 "$tmp/$l-sampled.db" 2>/dev/null |
      awk -v f="${f%%:*}" '$(NF-1) == f { v = $1; if ($2 == "s") v *= 1000; else if ($2 == "us") v /= 1000; print v; exit }')
    if awk -v g="${got:-0}" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 0.2 * w) }'; then
      pass "$l: overflow samples: ${f%%:*} has papi.perf.task_clock.sampled ${got} ms, want ~$want"
    else
      fail "$l: overflow samples: ${f%%:*} has papi.perf.task_clock.sampled ${got:-none} ms, want ~$want: $(cat "$tmp/$l-sampled.err")"
    fi
  done
}

measured fake GPUPROF_PAPI_LIBRARY="$FAKE"
sampled fake GPUPROF_PAPI_LIBRARY="$FAKE"
refused fake GPUPROF_PAPI_LIBRARY="$FAKE"
exact_intervals
if why=$("$B/tests/papi_probe" "$EV"); then
  measured real
  refused real
else
  echo "SKIP real libpapi cannot count $EV here: $why"
fi
if why=$("$B/tests/papi_probe" perf::TASK-CLOCK@1000000); then
  sampled real
else
  echo "SKIP real libpapi cannot sample perf::TASK-CLOCK on overflow here: $why"
fi
unchanged nolib 1 "GPUPROF_PAPI_LIBRARY=$tmp/none/libpapi.so.7.0 cannot be loaded" \
  GPUPROF_PAPI_LIBRARY="$tmp/none/libpapi.so.7.0" GPUPROF_PAPI_EVENTS="$EV"
unchanged empty 1 "GPUPROF_PAPI_EVENTS=, names no event" GPUPROF_PAPI_EVENTS=","
unchanged unset 1 "GPUPROF_PAPI_EVENTS is not set"
[ "$fails" -eq 0 ]
