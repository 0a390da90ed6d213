#!/usr/bin/env bash
# Host threads waiting for each other, end to end (tests/run/host_prog.c
# and omp_prog.c say what each scenario does and the answers by hand):
# traced, analysed, then gpuprof report --waits and --critical-path. A
# program linked with -lgpuprof (its pthread calls reach libgpuprof.so
# first), the same program preloaded by `gpuprof run`, an OpenMP program
# (clang -fopenmp, LLVM's libomp: OMPT) linked and preloaded, and one on
# GCC's libgomp (no OMPT: said once). Counts and which threads and regions
# lie on the path are exact; times are real, so with the unit U = 20 ms
# they are checked within 8 % or 3 ms of the hand-computed figure, and a
# scenario that misses is run once more (check_an_cpath_host checks exact
# times on hand-made traces). Uncontended locks leave no record at all.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
G=$B/bin/gpuprof
L=$B/tests/host_prog
P=$B/tests/run_host_prog
if [ ! -x "$G" ] || [ ! -x "$L" ] || [ ! -x "$P" ]; then
  fail "$G, $L and $P are built (run make tests first)"
  exit 1
fi
U=${HOST_MS:-20}
export HOST_MS=$U POCL_CACHE_DIR=$tmp/pocl

attempt() { # a scenario; once more when a check failed
  local out n
  out=$(fails=0; "$@"; echo "RC $fails")
  n=${out##*RC }
  if [ "$n" != 0 ]; then
    out=$(fails=0; "$@"; echo "RC $fails")
    n=${out##*RC }
  fi
  echo "${out%RC *}"
  fails=$((fails + n))
}
# measure NAME PROGRAM...: traced into $tmp/NAME, analysed into $tmp/NAME-db,
# reports in $tmp/NAME.w (waits) and $tmp/NAME.p (critical path).
measure() {
  local name=$1
  shift
  rm -rf "${tmp:?}/$name" "$tmp/$name-db"
  if GPUPROF_OUTPUT=$tmp/$name GPUPROF_TRACE=1 "$@" >/dev/null 2>"$tmp/err" &&
     "$G" analyze -o "$tmp/$name-db" "$tmp/$name" >/dev/null 2>>"$tmp/err"; then
    "$G" report --waits "$tmp/$name-db" >"$tmp/$name.w" 2>&1
    "$G" report --critical-path "$tmp/$name-db" >"$tmp/$name.p" 2>&1
    return 0
  fi
  fail "$name runs and is analysed: $(cat "$tmp/err")"
  return 1
}
ns() { awk -v v="$1" -v u="$2" 'BEGIN { m = u == "ms" ? 1e6 : u == "us" ? 1e3 : u == "s" ? 1e9 : 1; printf "%.0f", v * m }'; }
near_ns() { # what got_ns want_ns: within 8 % or 3 ms
  local ok got want
  ok=$(awk -v g="$2" -v w="$3" 'BEGIN { d = g - w; if (d < 0) d = -d; t = w * 0.08; if (t < 3e6) t = 3e6; print (d <= t) }')
  got=$(awk -v g="$2" 'BEGIN { printf "%.3f", g / 1e6 }')
  want=$(awk -v w="$3" 'BEGIN { printf "%.3f", w / 1e6 }')
  [ "$ok" = 1 ] && pass "$1: $got ms, want ~$want" || fail "$1: $got ms, want ~$want"
}
near() { near_ns "$1" "$2" $(($3 * U * 1000000)); } # what got_ns want_units
want_wait() { # name pattern count units
  local c v u
  read -r c v u < <(awk -v p="$2" '$1 == p { print $2, $3, $4 }' "$tmp/$1.w")
  [ "${c:-}" = "$3" ] && pass "$1: $2 x $3" || { fail "$1: $2 x $3 (found ${c:-none})"; cat "$tmp/$1.w"; }
  [ "$3" = 0 ] || near "$1: $2 time" "$(ns "$v" "$u")" "$4"
}
blamed() { # name activity units: the blame line of that activity
  local v u
  read -r v u < <(awk -v a="$2" '/^blamed/ { on = 1; next } on && substr($0, 24) == a { print $1, $2; exit }' "$tmp/$1.w")
  if [ -n "${v:-}" ]; then near "$1: blame on $2" "$(ns "$v" "$u")" "$3"; else
    fail "$1: $2 is blamed"; cat "$tmp/$1.w"; fi
}
# The path's time on steps of thread WHERE (a prefix, "" any) named NAME.
on_path() { # name where activity -> ns
  awk -v w="$2" -v a="$3" 'NR > 2 && /^ratings/ { exit }
    NR > 2 && substr($0, 54) == a && index(substr($0, 37, 16), w) == 1 {
      split(substr($0, 16, 12), t, " "); m = t[2] == "ms" ? 1e6 : t[2] == "us" ? 1e3 : t[2] == "s" ? 1e9 : 1
      s += t[1] * m } END { printf "%.0f", s }' "$tmp/$1.p"
}
want_path() { # name where activity units
  near "$1: on the path, $3 ($2)" "$(on_path "$1" "$2" "$3")" "$4"
}
path_len() { ns $(sed -n 's/^critical path, process 0: \([0-9.]*\) \(m*s\) of.*/\1 \2/p' "$tmp/$1.p"); }

# ---- a program linked with -lgpuprof ---------------------------------------
linked_join() {
  measure join "$L" join || return
  want_wait join WaitAtJoin 1 3
  blamed join work 3
  want_path join worker work 3
  want_path join main setup 1
  want_path join main after 1
  if command -v otf2-print >/dev/null 2>&1 &&
     "$G" export --otf2 -o "$tmp/join-otf2" "$tmp/join-db" >/dev/null 2>&1; then
    otf2-print "$tmp/join-otf2/traces.otf2" 2>/dev/null |
      grep -B1 '"critical_path" <0>; UINT8; 1' | grep -oE 'ENTER .*Region: "[a-z]*"' |
      sed 's/.*Region: //' | tr '\n' ' ' >"$tmp/join.marks"
    [ "$(cat "$tmp/join.marks")" = '"setup" "work" "after" ' ] &&
      pass "join: the OTF2 export marks setup, the worker's work and after on the path" ||
      fail "join: OTF2 path marks: $(cat "$tmp/join.marks")"
  fi
}
linked_barrier() {
  measure barrier "$L" barrier || return
  want_wait barrier WaitAtBarrier 2 5
  blamed barrier heavy 5
  want_path barrier t2 heavy 4
  [ "$(on_path barrier "" light)" = 0 ] && [ "$(on_path barrier "" mid)" = 0 ] &&
    pass "barrier: light and mid (waited for) are not on the path" ||
    { fail "barrier: light and mid not on the path"; cat "$tmp/barrier.p"; }
}
linked_mutex() {
  measure mutex "$L" mutex || return
  want_wait mutex LockContention 1 2
  blamed mutex hold 2
  want_path mutex holder hold 3
  want_path mutex main crit 1
  grep -q "pthread_mutex_lock (blocked) in <no region>" "$tmp/mutex.p" &&
    pass "mutex: the blocked lock is named" || fail "mutex: the blocked lock is named"
}
linked_cond() {
  measure cond "$L" cond || return
  want_wait cond WaitAtCondition 1 3
  blamed cond produce 3
  want_path cond producer produce 3
  want_path cond main consume 1
}
linked_quiet() {
  measure quiet "$L" quiet || return
  want_wait quiet LockContention 0 0
  "$G" report --trace "$tmp/quiet-db" >"$tmp/quiet.t" 2>&1
  # main: 2 creates, 2 joins; each worker its start and exit. No lock or
  # unlock of 200,000 uncontended pairs left a record.
  [ "$(grep -c 'host synchronization: 2 records' "$tmp/quiet.t")" = 2 ] &&
    grep -q '"main", host synchronization: 4 records' "$tmp/quiet.t" &&
    pass "quiet: uncontended locks leave no record (creates, starts, exits, joins only)" ||
    { fail "quiet: uncontended locks leave no record"; cat "$tmp/quiet.t"; }
}
for s in linked_join linked_barrier linked_mutex linked_cond linked_quiet; do
  attempt "$s"
done

# ---- on the realtime simulated GPU: a thread waiting for a kernel, joined --
S=$B/tests/cpath_host_prog
sim_join() {
  CPATH_MS=$U GPUPROF_BACKENDS=sim measure sjoin "$S" join || return
  want_wait sjoin WaitAtJoin 1 10
  # kJ: g's sync waited ~10 U for it (BlameKernel), and main's join ~10 U
  # for g while g waited for it
  blamed sjoin "kernel kJ" 20
  want_path sjoin "GPU 0/0" "kernel kJ" 10
  want_path sjoin "" post 2
  [ "$(on_path sjoin "" cpu_side)" = 0 ] && pass "sjoin: cpu_side (joined after it ended) is not on the path" ||
    { fail "sjoin: cpu_side is not on the path"; cat "$tmp/sjoin.p"; }
  proj=$("$G" project --speedup 'kernel:kJ=2' "$tmp/sjoin-db" |
    sed -n 's/^projection, process 0: run .* -> \([0-9.]*\) \(m*s\) .*/\1 \2/p')
  CPATH_MS=$U GPUPROF_BACKENDS=sim measure sjoin2 "$S" join 2 || return
  real=$(sed -n 's/^critical path, process 0: .* of a \([0-9.]*\) \(m*s\) run.*/\1 \2/p' "$tmp/sjoin2.p")
  near_ns "sjoin: projected kernel:kJ=2 against the run with kJ twice as fast" \
    "$(ns $proj)" "$(ns $real)"
}
if [ -x "$S" ]; then attempt sim_join; else fail "$S is built"; fi

# ---- the same program, preloaded (no regions, no thread names) ------------
preloaded() {
  measure pjoin "$G" run -- "$P" join || return
  want_wait pjoin WaitAtJoin 1 3
  want_path pjoin "thread 1" "<no region>" 3
  measure pbarrier "$G" run -- "$P" barrier || return
  want_wait pbarrier WaitAtBarrier 2 5
  measure pmutex "$G" run -- "$P" mutex || return
  want_wait pmutex LockContention 1 2
  measure pcond "$G" run -- "$P" cond || return
  want_wait pcond WaitAtCondition 1 3
}
attempt preloaded

# ---- OpenMP ---------------------------------------------------------------
omp_checks() { # name
  want_wait "$1" WaitAtBarrier 3 6
  want_wait "$1" WaitAtFork 1 2
}
openmp() {
  measure omp "$B/tests/omp_prog" || return
  omp_checks omp
  blamed omp heavy 3
  blamed omp heavy2 2
  blamed omp between 2
  want_path omp "thread 1" heavy 4
  want_path omp "thread 0" heavy2 3
  want_path omp "thread 0" between 2
  want_path omp "thread 1" last1 2
  near "omp: path length" "$(path_len omp)" 12
  measure pomp "$G" run -- "$B/tests/run_omp_prog" || return
  omp_checks pomp
}
if [ -x "$B/tests/omp_prog" ] && [ -x "$B/tests/run_omp_prog" ]; then
  attempt openmp
else
  echo "SKIP OpenMP: no clang -fopenmp with LLVM's libomp (apt-get install clang libomp-dev)"
fi
if [ -x "$B/tests/gomp_prog" ]; then
  GPUPROF_OUTPUT=$tmp/gomp GPUPROF_TRACE=1 GPUPROF_LOG=info HOST_MS=1 \
    "$B/tests/gomp_prog" >/dev/null 2>"$tmp/gomp.err"
  [ "$(grep -c "GCC's libgomp, which has no OMPT" "$tmp/gomp.err")" = 1 ] &&
    pass "GCC's libgomp: said once that it has no OMPT" ||
    { fail "GCC's libgomp: said once"; cat "$tmp/gomp.err"; }
fi
exit $((fails > 0))
