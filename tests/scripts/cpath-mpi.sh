#!/usr/bin/env bash
# The critical path across MPI ranks, end to end: three ranks of
# tests/mpi/mpi_cpath_prog.c (its opening comment has the pattern and the
# answers by hand) exchange messages and meet in barriers while the
# realtime simulated GPU runs their kernels; libgpuprof-pmpi's wrappers
# (linked in) put their MPI calls in the traces. `gpuprof report
# --critical-path` must walk rank 0's r0_prep and k0, the message to rank
# 1, rank 1's r1_work, the message to rank 2 and rank 2's k2, in that
# order and on those ranks; `report --waits` must find the two late
# senders and the waits at the barriers; `gpuprof project` must replay
# across ranks (a kernel on the path made twice as fast shortens the run
# by exactly half its time: the replay is deterministic). The ranks sleep
# (the sim GPU too), so times are real: with the unit U (MPI_CPATH_MS,
# 25 ms; at 10 ms a loaded 2-core machine missed by 10 ms) they are
# checked within 8 % or 3 ms of the hand-computed figure
# (the same rule as cpath.sh: a loaded machine delays a waking thread by
# milliseconds), and a run whose times miss is made once more. Records
# that cannot be matched (a receive no one sent) are left out, counted in
# one note, the path computed without them; a trace damaged in its MPI
# records is refused with a clear error, never a path. A second program
# (tests/mpi/mpi_more_prog.c) polls with MPI_Testall, frees a send's
# request, uses MPI_Iallreduce, MPI_Allgatherv and a Cartesian
# communicator: its path is checked against the hand-computed one. A plain
# MPI program under `gpuprof run --mpi` (LD_PRELOAD) has its MPI calls in
# its trace too; gpuprof-mpi writes the same database as gpuprof analyze.
# Skipped when mpicc or mpirun is missing.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
  echo "SKIP mpicc or mpirun not found (Debian: libopenmpi-dev openmpi-bin)"
  exit 0
fi
G=$B/bin/gpuprof
P=$B/tests/mpi_cpath_prog
R=$B/tests/mpi_ring
M=$B/tests/mpi_more_prog
for x in "$G" "$P" "$R" "$M" "$B/lib/libgpuprof-pmpi.so" "$B/bin/gpuprof-mpi"; do
  [ -e "$x" ] || { fail "$x is built (run make tests first)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_MCA_btl_base_warn_component_unused=0
U=${MPI_CPATH_MS:-25}
mpi3() { timeout 120 mpirun --allow-run-as-root --oversubscribe -np 3 "$@"; }
run() { # name [env...]: three ranks measured, analysed into $tmp/NAME-db
  local name=$1
  shift
  rm -rf "${tmp:?}/$name" "$tmp/$name-db"
  env "$@" MPI_CPATH_MS="$U" GPUPROF_OUTPUT="$tmp/$name" GPUPROF_TRACE=1 GPUPROF_BACKENDS=sim \
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 3 "$P" >"$tmp/$name.out" 2>&1 &&
    "$G" analyze -o "$tmp/$name-db" "$tmp/$name" >/dev/null 2>"$tmp/err" ||
    { fail "$name: 3 ranks run and are analysed: $(cat "$tmp/$name.out" "$tmp/err")"; return 1; }
}
# "12.345 ms" / "600.1 us" / "12 ns" -> ns
ns() { awk -v v="$1" -v u="$2" 'BEGIN { m = u == "ms" ? 1e6 : u == "us" ? 1e3 : u == "s" ? 1e9 : 1; printf "%d", v * m }'; }
near() { # what got_ns want_units
  local w ok
  w=$(awk -v w="$3" -v u="$U" 'BEGIN { print w * u }')
  ok=$(awk -v g="$2" -v w="$w" 'BEGIN { d = g - w * 1e6; if (d < 0) d = -d; t = w * 1e6 * 0.08; if (t < 3e6) t = 3e6; print (d <= t) ? 1 : 0 }')
  [ "$ok" = 1 ] && pass "$1: $(awk -v g="$2" 'BEGIN{printf "%.3f", g/1e6}') ms, want ~$w" ||
    fail "$1: $(awk -v g="$2" 'BEGIN{printf "%.3f", g/1e6}') ms, want ~$w"
}
# The path's steps as "rank|activity|at_ns|path_ns" lines.
steps() {
  awk 'function n(v, u) { return u == "ms" ? v * 1e6 : u == "us" ? v * 1e3 : u == "s" ? v * 1e9 : v }
       /^ratings/ { exit }
       $6 == "rank" { a = ""; for (i = 10; i <= NF; i++) a = a (a ? " " : "") $i
                      printf "%s|%s|%d|%d\n", $7, a, n($1, $2), n($3, $4) }' "$1"
}

scenario_path() {
  run path || return
  "$G" report --critical-path "$tmp/path-db" >"$tmp/path.p" 2>&1
  grep -q '^critical path, process 0 (3 MPI ranks):' "$tmp/path.p" &&
    pass "one path for the run's 3 ranks" || { fail "one path for the run's 3 ranks"; cat "$tmp/path.p"; return; }
  steps "$tmp/path.p" >"$tmp/steps"
  # From the aligning barrier (the first MPI_Barrier step) to the last
  # one (MPI_Finalize, after it, is no synchronization: the path ends in
  # the finalize of whichever rank took longest).
  last=$(awk -F'|' '$2 ~ /^MPI_Barrier/ { b = NR } END { print b }' "$tmp/steps")
  awk -F'|' -v l="$last" 'f && NR <= l { print } $2 ~ /^MPI_Barrier/ && !f { f = 1 }' "$tmp/steps" >"$tmp/after"
  # Work only: how long an API call or MPI call takes on the path is the
  # loaded machine's (a launch preempted for 7 ms once).
  sig=$(awk -F'|' -v m="$((U * 250000))" '$4 >= m && $2 !~ /^(<|MPI_)/ { printf "%s:%s,", $1, $2 }' "$tmp/after")
  [ "$sig" = "0:r0_prep,0:kernel k0,1:r1_work,2:kernel k2," ] &&
    pass "the path's long steps: rank 0 r0_prep, k0; rank 1 r1_work; rank 2 k2" ||
    { fail "the path's long steps: rank 0 r0_prep, k0; rank 1 r1_work; rank 2 k2 (got $sig)"; cat "$tmp/path.p"; }
  ranks=$(awk -F'|' 'NR == 1 || $1 != p { printf "%s ", $1; p = $1 }' "$tmp/after")
  case "$ranks" in
    "0 1 2 "|"0 1 2 0 "|"0 1 2 1 ") pass "the path crosses from rank 0 to 1 to 2 ($ranks)" ;;
    *) fail "the path crosses from rank 0 to 1 to 2 (got: $ranks)"; cat "$tmp/path.p" ;;
  esac
  # Where it crosses: rank 1's receive of rank 0's message, rank 2's
  # completion of rank 1's; it ends in the last barrier.
  grep -q '^1|MPI_Recv|' "$tmp/after" && grep -q '^2|MPI_Wait|' "$tmp/after" &&
    [ "$(awk -F'|' '$2 ~ /^MPI_Barrier/ { b = NR } END { print b }' "$tmp/after")" -ge \
      "$(awk -F'|' '$2 == "kernel k2" { print NR }' "$tmp/after")" ] &&
    pass "it crosses at MPI_Recv (rank 1) and MPI_Wait (rank 2), ends in MPI_Barrier" ||
    { fail "it crosses at MPI_Recv (rank 1) and MPI_Wait (rank 2), ends in MPI_Barrier"; cat "$tmp/after"; }
  len=$(awk -F'|' 'NR == 1 { a = $3 } { e = $3 + $4 } END { print e - a }' "$tmp/after")
  near "path length from the aligning barrier" "$len" 16
  "$G" report --waits "$tmp/path-db" >"$tmp/path.w" 2>&1
  got=$(awk '$1 == "LateSender" { print $2 " " $3 " " $4 }' "$tmp/path.w")
  [ "${got%% *}" = 2 ] && pass "LateSender x 2" || { fail "LateSender x 2 (got $got)"; cat "$tmp/path.w"; }
  set -- $got
  near "LateSender time (rank 1 ~8U, rank 2 ~7U)" "$(ns "$2" "$3")" 15
  [ "$(awk '$1 == "LateReceiver" { print $2 }' "$tmp/path.w")" = 0 ] &&
    pass "LateReceiver x 0 (the sends were posted after their receives)" || fail "LateReceiver x 0"
  got=$(awk '$1 == "WaitAtCollective" { print $2 " " $3 " " $4 }' "$tmp/path.w")
  set -- $got
  # Two members wait at each barrier: the aligning one (its waits are
  # the ranks' start-up skew, unknown) and the last (rank 0 ~8U, 1 ~5U).
  w=$(ns "$2" "$3")
  [ "$1" = 4 ] && [ "$w" -ge "$((13 * U * 1000000 * 92 / 100))" ] &&
    pass "WaitAtCollective x 4, at least ~13U ($2 $3)" ||
    { fail "WaitAtCollective x 4, at least ~13U (got $got)"; cat "$tmp/path.w"; }
  # Projection across ranks: k2 (rank 2, on the path) twice as fast
  # shortens the run by 2.5U; k0 (rank 0) by 3U: rank 2 still waits for
  # rank 1's message, which comes 3U sooner.
  for k in k2:25 k0:30; do
    "$G" project --speedup "kernel:${k%%:*}=2" "$tmp/path-db" >"$tmp/proj" 2>&1
    d=$(sed -n 's/^projection, process 0 (3 MPI ranks): run \([0-9.]*\) \([mun]*s\) -> \([0-9.]*\) \([mun]*s\) .*/\1 \2 \3 \4/p' "$tmp/proj")
    set -- $d
    got=$(( $(ns "$1" "$2") - $(ns "$3" "$4") ))
    want=$(( ${k##*:} * U * 100000 ))
    diff=$(( got > want ? got - want : want - got ))
    tol=2000 # the report's rounding: 1 us in ms, 1 ms in s
    [ "${2:-}" = s ] && tol=1000000
    [ -n "$d" ] && [ "$diff" -le "$tol" ] &&
      pass "project kernel:${k%%:*}=2 shortens the run by $got ns (want $want)" ||
      { fail "project kernel:${k%%:*}=2 shortens the run by $got ns (want $want)"; cat "$tmp/proj"; }
  done
}

# A receive that never happened: rank 1's one message to rank 2 (tag 9)
# meets two receives. Which one it was is unknowable, so that key's three
# records are left out, the note says so, and the path is computed
# without them (rank 2's wait no longer waits for rank 1's send).
scenario_lie() {
  run lie MPI_CPATH_LIE=1 || return
  "$G" report --critical-path "$tmp/lie-db" >"$tmp/lie.p" 2>&1
  rc=$?
  [ $rc = 0 ] && grep -q '^critical path, process 0 (3 MPI ranks):' "$tmp/lie.p" &&
    grep -q "^note, process 0 (3 MPI ranks): 3 MPI record(s) left out, their edges missing, the rest joined: 3 send(s) and receive(s) pairing with none" "$tmp/lie.p" &&
    [ "$(grep -c '^note' "$tmp/lie.p")" = 1 ] &&
    pass "unmatchable MPI records: 3 left out in one note, the path computed" ||
    { fail "unmatchable MPI records: 3 left out in one note, the path computed (rc $rc)"; cat "$tmp/lie.p"; }
  "$G" report --waits "$tmp/lie-db" >"$tmp/lie.w" 2>&1
  [ "$(awk '$1 == "LateSender" { print $2 }' "$tmp/lie.w")" = 1 ] &&
    pass "unmatchable MPI records: rank 2's wait is no LateSender, rank 1's receive is" ||
    { fail "unmatchable MPI records: LateSender x 1"; cat "$tmp/lie.w"; }
}

# tests/mpi/mpi_more_prog.c (its opening comment has the pattern and the
# answers by hand): a Cartesian communicator, an MPI_Testall polling
# loop, MPI_Request_free on a send, MPI_Iallreduce + MPI_Wait,
# MPI_Allgatherv. The path runs rank 0's a0, the message to rank 1's
# polling loop (the completing MPI_Testall: the path follows the sender,
# not the polls), a1, the message to rank 2, a2, its MPI_Iallreduce to rank
# 0's MPI_Wait, c0, MPI_Allgatherv: ~11U; the freed send is the one record
# left out (its message still joins rank 2's receive; the two messages of
# persistent requests after it match).
scenario_more() {
  local name=more
  rm -rf "${tmp:?}/$name" "$tmp/$name-db"
  MPI_CPATH_MS="$U" GPUPROF_OUTPUT="$tmp/$name" GPUPROF_TRACE=1 \
    mpi3 "$M" >"$tmp/$name.out" 2>&1 &&
    "$G" analyze -o "$tmp/$name-db" "$tmp/$name" >/dev/null 2>"$tmp/err" ||
    { fail "more: 3 ranks run and are analysed: $(cat "$tmp/$name.out" "$tmp/err")"; return; }
  "$G" report --critical-path "$tmp/more-db" >"$tmp/more.p" 2>&1 &&
    grep -q '^critical path, process 0 (3 MPI ranks):' "$tmp/more.p" &&
    pass "more: one path for the run's 3 ranks" || { fail "more: one path for the run's 3 ranks"; cat "$tmp/more.p"; return; }
  [ "$(grep -c '^note' "$tmp/more.p")" = 1 ] &&
    grep -q "^note, process 0 (3 MPI ranks): 1 MPI record(s) left out, their edges missing, the rest joined: 1 nonblocking posting(s) never seen completing" "$tmp/more.p" &&
    pass "more: exactly the freed send left out, in one note" ||
    { fail "more: exactly the freed send left out, in one note"; grep '^note' "$tmp/more.p"; }
  steps "$tmp/more.p" >"$tmp/more.steps"
  last=$(awk -F'|' '$2 ~ /^MPI_Barrier/ { b = NR } END { print b }' "$tmp/more.steps")
  awk -F'|' -v l="$last" 'f && NR <= l { print } $2 ~ /^MPI_Barrier/ && !f { f = 1 }' "$tmp/more.steps" >"$tmp/more.after"
  sig=$(awk -F'|' -v m="$((U * 250000))" '$4 >= m && $2 !~ /^(<|MPI_)/ { printf "%s:%s,", $1, $2 }' "$tmp/more.after")
  [ "$sig" = "0:a0,1:a1,2:a2,0:c0," ] &&
    pass "more: the path's long steps: rank 0 a0; rank 1 a1; rank 2 a2; rank 0 c0" ||
    { fail "more: the path's long steps: rank 0 a0; rank 1 a1; rank 2 a2; rank 0 c0 (got $sig)"; cat "$tmp/more.p"; }
  order=$(awk -F'|' '$2 ~ /^(MPI_Testall|MPI_Recv|MPI_Wait|MPI_Allgatherv)$/ { printf "%s:%s,", $1, $2 }' "$tmp/more.after")
  case "$order" in
    "1:MPI_Testall,2:MPI_Recv,0:MPI_Wait,"*MPI_Allgatherv,*) pass "more: it crosses at rank 1's MPI_Testall, rank 2's MPI_Recv, rank 0's MPI_Wait, then MPI_Allgatherv ($order)" ;;
    *) fail "more: it crosses at rank 1's MPI_Testall, rank 2's MPI_Recv, rank 0's MPI_Wait, then MPI_Allgatherv (got $order)"; cat "$tmp/more.after" ;;
  esac
  len=$(awk -F'|' 'NR == 1 { a = $3 } { e = $3 + $4 } END { print e - a }' "$tmp/more.after")
  near "more: path length from the aligning barrier" "$len" 11
  "$G" report --waits "$tmp/more-db" >"$tmp/more.w" 2>&1
  set -- $(awk '$1 == "LateSender" { print $2 " " $3 " " $4 }' "$tmp/more.w")
  near "more: LateSender time (rank 2's receive ~5U)" "$(ns "$2" "$3")" 5
  set -- $(awk '$1 == "WaitAtCollective" { print $2 " " $3 " " $4 }' "$tmp/more.w")
  w=$(ns "$2" "$3")
  # MPI_Iallreduce: rank 0 waits ~6U, rank 1 ~4U; MPI_Allgatherv: ranks
  # 1 and 2 ~2U each (plus the barriers' start-up skew, unknown).
  [ "$w" -ge "$((14 * U * 1000000 * 92 / 100))" ] &&
    pass "more: WaitAtCollective at least ~14U ($2 $3)" ||
    { fail "more: WaitAtCollective at least ~14U ($2 $3)"; cat "$tmp/more.w"; }
}

# Rank 2's trace damaged inside its MPI records (a byte of the chunk's
# payload: its checksum fails): the analysis says so and uses what comes
# before; rank 2's MPI records are gone, so the ranks do not match.
scenario_damaged() {
  [ -d "$tmp/path" ] || return
  rm -rf "$tmp/dmg" "$tmp/dmg-db"
  cp -r "$tmp/path" "$tmp/dmg"
  f=$(ls "$tmp"/dmg/*-r2-*.gptrace)
  off=$(LC_ALL=C grep -obUaP 'TCHK\x06\x00' "$f" | head -1 | cut -d: -f1)
  [ -n "$off" ] || { fail "rank 2's trace has an MPI_RECORDS chunk"; return; }
  printf '\377' | dd of="$f" bs=1 seek=$((off + 32 + 44)) conv=notrunc status=none
  "$G" analyze -o "$tmp/dmg-db" "$tmp/dmg" >/dev/null 2>"$tmp/err" &&
    grep -q "checksum" "$tmp/err" && pass "the damaged trace is said ($(head -c 120 "$tmp/err"))" ||
    { fail "the damaged trace is said"; cat "$tmp/err"; }
  "$G" report --critical-path "$tmp/dmg-db" >"$tmp/dmg.p" 2>&1
  rc=$?
  [ $rc != 0 ] && grep -q "MPI records missing or damaged; no critical path across ranks" "$tmp/dmg.p" &&
    ! grep -q "^critical path" "$tmp/dmg.p" &&
    pass "damaged MPI records: a clear error, no path ($(grep -o 'trace.db: [^:]*' "$tmp/dmg.p" | head -1))" ||
    { fail "damaged MPI records: a clear error, no path (rc $rc)"; cat "$tmp/dmg.p"; }
}

# gpuprof-mpi (the aggregation on 2 ranks) writes the same trace.db, MPI
# streams and all, as gpuprof analyze.
scenario_gpuprof_mpi() {
  [ -d "$tmp/path-db" ] || return
  rm -rf "$tmp/gm"
  timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$B/bin/gpuprof-mpi" analyze \
    -o "$tmp/gm" "$tmp/path" >/dev/null 2>"$tmp/err" &&
    cmp -s "$tmp/gm/trace.db" "$tmp/path-db/trace.db" && cmp -s "$tmp/gm/meta.db" "$tmp/path-db/meta.db" &&
    pass "gpuprof-mpi on 2 ranks: the same trace.db and meta.db bytes" ||
    fail "gpuprof-mpi on 2 ranks: the same trace.db and meta.db bytes: $(cat "$tmp/err")"
}

# An unmodified MPI program under `gpuprof run --mpi` (LD_PRELOAD): each
# rank's 7 calls (Init, Sendrecv's send and receive, Comm_dup, Allreduce,
# Barrier, Finalize) in its trace, the ranks joined.
scenario_preload() {
  rm -rf "$tmp/ring" "$tmp/ring-db"
  mpi3 "$G" run --mpi -o "$tmp/ring" -- "$R" >"$tmp/ring.out" 2>&1 &&
    "$G" analyze -o "$tmp/ring-db" "$tmp/ring" >/dev/null 2>"$tmp/err" ||
    { fail "gpuprof run --mpi on 3 ranks: $(cat "$tmp/ring.out" "$tmp/err")"; return; }
  n=$("$G" report --trace "$tmp/ring-db" | grep -c 'MPI calls: 7 records$')
  [ "$n" = 3 ] && pass "gpuprof run --mpi: 3 ranks with 7 MPI events each" ||
    { fail "gpuprof run --mpi: 3 ranks with 7 MPI events each"; "$G" report --trace "$tmp/ring-db"; }
  "$G" report --critical-path "$tmp/ring-db" >"$tmp/ring.p" 2>&1 &&
    grep -q '^critical path, process 0 (3 MPI ranks):' "$tmp/ring.p" &&
    grep -qE 'rank [0-2] thread [0-9]+ +MPI_Allreduce$' "$tmp/ring.p" &&
    pass "gpuprof run --mpi: the ranks' path joined through the collectives" ||
    { fail "gpuprof run --mpi: the ranks' path joined"; cat "$tmp/ring.p"; }
}

attempt() { # a scenario with real times: once more when a check fails
  local out n
  out=$(fails=0; "$1"; echo "RC $fails")
  n=${out##*RC }
  if [ "$n" != 0 ]; then
    out=$(fails=0; "$1"; echo "RC $fails")
    n=${out##*RC }
  fi
  echo "${out%RC *}"
  fails=$((fails + n))
}
attempt scenario_path
attempt scenario_more
scenario_gpuprof_mpi
scenario_lie
scenario_damaged
scenario_preload
[ $fails = 0 ]
