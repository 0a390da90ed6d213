#!/usr/bin/env bash
# CPU samples (doc/CORE.md "CPU samples") on a program that burns known CPU
# time in known functions (tests/run/cpu_burn.c), measured by `gpuprof run`
# with GPUPROF_CPU_SAMPLING=cputime@5ms:
#  - cpu.time at each burning function within 20 % of the time it burned
#    (a sample weighs the CPU time since the thread's previous one, so the
#    error is where the first and last samples of a burn fall), and
#    cpu.samples (the timer's expirations) no more than cpu.time allows;
#  - a program with its own SIGPROF handler and ITIMER_PROF timer still
#    gets its signals and is measured all the same;
#  - 1000 threads made and joined leave no timer behind (/proc/self/timers);
#  - a fork child is sampled into its own profile;
#  - with --trace, the samples are in the trace with their times, their
#    values adding up to the profile's cpu.time;
#  - the critical path names a host segment by the procedure its samples
#    saw (`report --critical-path`: the step, a "sampled" line, the
#    ratings), and the views' cpath.time goes to spin with them;
#  - the OTF2 export holds every sample as a calling-context sample, with
#    critical_path 1 on main's (its spin is the path);
#  - off: no cpu.time; a typo: one line naming it, the default used.
# Prints PASS/FAIL lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$B/bin/gpuprof
P=$B/tests/run_cpu_burn
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for x in "$G" "$P" "$B/lib/libgpuprof-preload.so"; do
  [ -e "$x" ] || { fail "$x is built (run make tests first)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPUPROF_CPU_SAMPLING=cputime@5ms

run() { # name args...: measured into $tmp/name, analysed into $tmp/name-db
  local name=$1
  shift
  "$G" run "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &&
    "$G" analyze -o "$tmp/$name-db" "$tmp/$name" >/dev/null 2>>"$tmp/$name.err"
}
# The inclusive value of metric M at procedure F in the flat view (ms, or a
# count).
at() { # db metric function
  "$G" report --view flat --metric "$2" --threshold 0 "$1" 2>/dev/null |
    awk -v f="$3" '$(NF-1) == f {
      v = $1; if ($2 == "s") v *= 1000; else if ($2 == "us") v /= 1000
      print v; exit }'
}
near() { # what got want: within 20 %
  awk -v g="${2:-0}" -v w="$3" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 0.2 * w) }' &&
    pass "$1: ${2:-none} ms, want ~$3" || fail "$1: ${2:-none} ms, want ~$3"
}

if run burn -o "$tmp/burn" --trace "$P" burn; then
  near "burn_main's cpu.time" "$(at "$tmp/burn-db" cpu.time burn_main)" 300
  near "burn_thread's cpu.time (a thread of its own)" "$(at "$tmp/burn-db" cpu.time burn_thread)" 150
  t=$(at "$tmp/burn-db" cpu.time burn_main) n=$(at "$tmp/burn-db" cpu.samples burn_main)
  [ -n "$n" ] && awk -v t="$t" -v n="$n" 'BEGIN { exit !(n >= 1 && 5 * n <= t + 10) }' &&
    pass "cpu.samples at burn_main within what cpu.time allows at 5 ms ($t ms, $n)" ||
    fail "cpu.samples at burn_main against cpu.time at 5 ms ($t ms, ${n:-none})"
  # The trace: each thread's samples, their values adding up to what the
  # profile has.
  "$G" dump "$tmp"/burn/*.gptrace >"$tmp/dump" 2>&1
  sum=$(awk '/ samples over / { for (i = 1; i <= NF; i++) if ($i == "summing") s += $(i + 2) } END { print s + 0 }' "$tmp/dump")
  total=$("$G" report --view flat --metric cpu.time --threshold 0 "$tmp/burn-db" |
    sed -n 's/.*the whole: cpu.time \([0-9.]*\) ms.*/\1/p')
  # (the report rounds to the microsecond)
  awk -v s="$sum" -v t="${total:-0}" 'BEGIN { d = s - t * 1e6; if (d < 0) d = -d; exit !(s > 0 && d <= 500) }' &&
    pass "the trace's samples add up to the profile's cpu.time ($total ms)" ||
    fail "the trace's samples ($sum ns) against the profile's cpu.time (${total:-none} ms)"
  # Sample times lie within the trace's span (times from the first record).
  span=$(awk '/ samples over / { for (i = 1; i <= NF; i++) if ($i == "over") print $(i + 1) }' "$tmp/dump" | sort -g | tail -1)
  [ -n "$span" ] && awk -v s="$span" 'BEGIN { exit !(s > 0 && s < 5000) }' &&
    pass "sample times span ${span} ms of a sub-second run" ||
    fail "sample times: span ${span:-none} ms"
  # The critical path's host segment is named by its samples: main's
  # segment between pthread_create and pthread_join is all spin().
  "$G" report --critical-path "$tmp/burn-db" >"$tmp/path" 2>&1
  grep -qE '^ +[0-9.]+ [mun]?s +[0-9.]+ [mun]?s +[0-9.]+%  thread 0 +spin \(run_cpu_burn\)$' "$tmp/path" &&
    share=$(sed -nE 's/^ +sampled \([0-9]+\): spin \(run_cpu_burn\) +([0-9.]+)%.*/\1/p' "$tmp/path") &&
    awk -v s="${share:-0}" 'BEGIN { exit !(s >= 80) }' && # the rest: clock_gettime's vDSO

    grep -qE '^ +[0-9.]+ +0\.000 +[0-9.]+  spin \(run_cpu_burn\)$' "$tmp/path" &&
    pass "the critical path names main's CPU work by its samples (spin, $share %), in the ratings too" ||
    fail "the critical path's CPU work named by samples: $(cat "$tmp/path")"
  # cpath.time in the views follows the samples too: main's path segment
  # is spin's, not its region's (the thread root).
  "$G" report --cpath-metrics --view flat --metric cpath.time --threshold 0 "$tmp/burn-db" >"$tmp/cpflat" 2>&1
  cps=$(awk '$(NF-1) == "spin" && $NF == "(run_cpu_burn)" { print $3; exit }' "$tmp/cpflat")
  [ -n "$cps" ] && awk -v s="${cps%\%}" 'BEGIN { exit !(s + 0 >= 80) }' &&
    pass "the views' cpath.time is at spin ($cps of the path), where the samples saw it" ||
    fail "cpath.time at spin in the flat view: ${cps:-none}: $(head -8 "$tmp/cpflat")"
  # The OTF2 export carries every sample as a calling-context sample on
  # its thread's location, spin's calling context beneath burn_main.
  "$G" export --otf2 -o "$tmp/otf2" "$tmp/burn-db" >/dev/null 2>"$tmp/otf2.err"
  if ! command -v otf2-print >/dev/null 2>&1; then
    echo "SKIP OTF2 samples: no otf2-print (Debian: otf2-tools)"
  elif grep -q "without OTF2 support" "$tmp/otf2.err"; then
    echo "SKIP OTF2 samples: a build without OTF2 support"
  else
    want=$(awk '/ samples over / { for (i = 1; i <= NF; i++) if ($i == "samples") n += $(i - 1) } END { print n + 0 }' "$tmp/dump")
    otf2-print "$tmp/otf2/traces.otf2" >"$tmp/otf2.ev" 2>"$tmp/otf2.err"
    got=$(grep -c '^CALLING_CONTEXT_SAMPLE ' "$tmp/otf2.ev")
    spin=$(grep '^CALLING_CONTEXT_SAMPLE ' "$tmp/otf2.ev" | grep -c 'Calling Context: "spin (run_cpu_burn)"')
    [ ! -s "$tmp/otf2.err" ] && [ "$got" -gt 0 ] && [ "$got" = "$want" ] &&
      [ $((spin * 10)) -ge $((got * 8)) ] &&
      otf2-print -G "$tmp/otf2/traces.otf2" 2>/dev/null |
        grep -qE '^CALLING_CONTEXT +[0-9]+ +Region: "spin \(run_cpu_burn\)" <[0-9]+>, Source code location: UNDEFINED, Parent: "burn_main \(run_cpu_burn\)"' &&
      pass "OTF2: all $got samples as calling-context samples, $spin in spin (beneath burn_main)" ||
      fail "OTF2 samples: $got of $want, $spin in spin: $(head -3 "$tmp/otf2.err")"
    # Each sample says whether it is on the critical path: main's spin is
    # (the path above), so most of the main thread's samples carry 1.
    main=$(otf2-print -G "$tmp/otf2/traces.otf2" 2>/dev/null |
      awk '$1 == "LOCATION" && /Name: "main \(tid / { print $2; exit }')
    cp=$(awk -v m="${main:--1}" '/^CALLING_CONTEXT_SAMPLE/ { s = 1; loc = $2; n[loc]++; next }
      s && /"critical_path"/ { v = $NF; sub(/\)$/, "", v); a++; if (v == 1) on[loc]++ }
      { s = 0 } END { printf "%d %d %d\n", a, on[m], n[m] }' "$tmp/otf2.ev")
    read -r carry on0 n0 <<<"$cp"
    [ "$carry" = "$got" ] && [ "$n0" -gt 0 ] && [ $((on0 * 10)) -ge $((n0 * 8)) ] &&
      pass "OTF2: every sample carries critical_path; main's on the path: $on0 of $n0" ||
      fail "OTF2 samples' critical_path: $carry of $got carry it, main's on the path $on0 of $n0"
  fi
else
  fail "cpu_burn burn is measured and analysed: $(cat "$tmp/burn.err")"
fi

if run own -o "$tmp/own" "$P" ownsig; then
  own=$(sed -n 's/^own signals \([0-9]*\)$/\1/p' "$tmp/own.out")
  [ "${own:-0}" -gt 0 ] && pass "the program's own SIGPROF timer: $own signals" ||
    fail "the program's own SIGPROF timer: ${own:-no} signals"
  near "its burn_main is measured all the same" "$(at "$tmp/own-db" cpu.time burn_main)" 300
else
  fail "cpu_burn ownsig runs and is measured: $(cat "$tmp/own.out" "$tmp/own.err")"
fi

GPUPROF_CPU_SAMPLING=cputime@5ms,realtime@5ms "$G" run -o "$tmp/thr" "$P" threads 1000 >"$tmp/thr.out" 2>&1
left=$(sed -n 's/^timers left \([0-9-]*\)$/\1/p' "$tmp/thr.out")
[ -n "$left" ] && [ "$left" -ge 0 ] && [ "$left" -le 2 ] &&
  pass "1000 threads made and joined: $left timers left (the main thread's)" ||
  fail "1000 threads: timers left ${left:-?}: $(tail -3 "$tmp/thr.out")"

if run fork -o "$tmp/fork" "$P" fork; then
  [ "$(ls "$tmp/fork"/*.gpuprof | wc -l)" = 2 ] &&
    pass "a fork child writes a profile of its own" || fail "fork: $(ls "$tmp/fork")"
  near "the child's burn_child" "$(at "$tmp/fork-db" cpu.time burn_child)" 200
else
  fail "cpu_burn fork is measured: $(cat "$tmp/fork.err")"
fi

if GPUPROF_CPU_SAMPLING=off run off -o "$tmp/off" "$P" burn; then
  [ -z "$(at "$tmp/off-db" cpu.time burn_main)" ] &&
    pass "off: no cpu.time" || fail "off: cpu.time $(at "$tmp/off-db" cpu.time burn_main)"
else
  fail "off: measured: $(cat "$tmp/off.err")"
fi

if GPUPROF_CPU_SAMPLING=cputme@5ms run typo -o "$tmp/typo" "$P" burn; then
  grep -q "^gpuprof: ignoring GPUPROF_CPU_SAMPLING=cputme@5ms (.*); using cputime@10ms$" "$tmp/typo.err" &&
    [ "$(grep -c GPUPROF_CPU_SAMPLING "$tmp/typo.err")" = 1 ] &&
    pass "a typo is one line naming it; the default is used" ||
    fail "a typo: $(cat "$tmp/typo.err")"
  near "... and the default samples" "$(at "$tmp/typo-db" cpu.time burn_main)" 300
else
  fail "a typo stops nothing: $(cat "$tmp/typo.err")"
fi
exit $((fails > 0))
