#!/usr/bin/env bash
# gpuprof-mpi end to end: `mpirun -np N gpuprof-mpi analyze` writes the
# same database, byte for byte, as `gpuprof analyze` over the same
# measurement directories: synthetic profiles (tests/tools/gen_measure),
# tests/sim/sim_demo with traces (trace.db) and tests/sim/structure_prog
# (DWARF structure), on 1, 2, 3 and 4 ranks, with more ranks than files,
# with -j 2 and with a memory budget per rank. A damaged profile (pass 1)
# or trace (pass 2) on one rank fails every rank with one message naming
# it, within a time limit (no hang), and leaves neither a database nor
# temporary files under the output (an earlier database stays as it was);
# a trace damaged in its middle is used up to the damage, said and counted
# as `gpuprof analyze` does (--strict: refused). GPUPROF_MPI_PHASES says
# where the ranks' time went.
# Skipped when mpicc/mpirun are missing (Debian: libopenmpi-dev
# openmpi-bin).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
G=$B/bin/gpuprof
M=$B/bin/gpuprof-mpi
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
  echo "SKIP mpicc or mpirun not found (Debian: libopenmpi-dev openmpi-bin)"
  exit 0
fi
for x in "$G" "$M" "$B/tests/gen_measure" "$B/tests/sim_demo" "$B/tests/structure_prog"; do
  [ -x "$x" ] || { fail "$x is built (run make tests first)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Open MPI: as root in containers and CI, more ranks than cores; no
# complaints about missing network hardware.
export OMPI_MCA_btl_base_warn_component_unused=0
mpi() { # NP ARGS...: gpuprof-mpi on NP ranks, killed after 120 s
  local np=$1
  shift
  timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$np" "$M" "$@"
}

if mpi 2 --version >"$tmp/out" 2>"$tmp/err" && grep -q '^gpuprof-mpi ' "$tmp/out"; then
  pass "mpirun starts gpuprof-mpi on 2 ranks"
else
  fail "mpirun starts gpuprof-mpi on 2 ranks (Open MPI cannot start here?): $(cat "$tmp/err")"
  exit 1
fi

# Inputs: a directory of synthetic profiles (7 processes x 3 threads) and
# one of real ones (2 sim_demo runs with traces, 1 structure_prog run).
mkdir -p "$tmp/gen" "$tmp/sim" "$tmp/two"
"$B/tests/gen_measure" "$tmp/gen" 7 3 1 &&
  for i in 1 2; do
    GPUPROF_OUTPUT=$tmp/sim GPUPROF_TRACE=1 GPUPROF_BACKENDS=sim "$B/tests/sim_demo" >/dev/null 2>&1
  done &&
  GPUPROF_OUTPUT=$tmp/sim "$B/tests/structure_prog" >/dev/null 2>&1 &&
  "$B/tests/gen_measure" "$tmp/two" 2 2 9 700 spmd ||
  { fail "the measurements are made"; exit 1; }
[ "$(ls "$tmp"/sim/*.gptrace | wc -l)" = 2 ] && [ "$(ls "$tmp"/sim/*.gpuprof | wc -l)" = 3 ] ||
  { fail "3 profiles and 2 traces in $tmp/sim"; ls "$tmp/sim"; exit 1; }

"$G" analyze -j 2 -o "$tmp/ref" "$tmp/gen" "$tmp/sim" >/dev/null 2>"$tmp/err" &&
  [ -s "$tmp/ref/trace.db" ] ||
  { fail "gpuprof analyze: $(cat "$tmp/err")"; exit 1; }

# same REF DB WHAT: every file of REF is in DB with the same bytes, and DB
# holds nothing else.
same() {
  local f ok=1
  for f in meta.db profile.db cct.db stats.db trace.db; do
    if [ -e "$1/$f" ] || [ -e "$2/$f" ]; then
      cmp -s "$1/$f" "$2/$f" || { ok=0; echo "    $f differs"; }
    fi
  done
  [ "$(ls -A "$1")" = "$(ls -A "$2")" ] || { ok=0; echo "    files: $(ls -A "$2" | tr '\n' ' ')"; }
  [ $ok = 1 ] && pass "$3: the same database bytes as gpuprof analyze" ||
    fail "$3: the same database bytes as gpuprof analyze"
}

for np in 1 2 3 4; do
  if mpi "$np" analyze -o "$tmp/db$np" "$tmp/gen" "$tmp/sim" >"$tmp/out" 2>"$tmp/err"; then
    same "$tmp/ref" "$tmp/db$np" "$np ranks"
  else
    fail "$np ranks: exit $? $(cat "$tmp/out" "$tmp/err")"
  fi
done
grep -q "^gpuprof-mpi: database written to $tmp/db4 (4 ranks)\$" "$tmp/out" &&
  [ "$(wc -l <"$tmp/out")" = 1 ] &&
  pass "one line from rank 0 says where the database is" ||
  { fail "one line from rank 0 says where the database is"; cat "$tmp/out"; }

# The same command: `mpirun gpuprof analyze` runs gpuprof-mpi beside it.
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$G" analyze \
  -o "$tmp/dbg" "$tmp/gen" "$tmp/sim" >"$tmp/out" 2>"$tmp/err" &&
  same "$tmp/ref" "$tmp/dbg" "mpirun -np 2 gpuprof analyze" ||
  fail "mpirun -np 2 gpuprof analyze: $(cat "$tmp/out" "$tmp/err")"
# A gpuprof without gpuprof-mpi beside it, in a job of 2: refuses, writes
# nothing.
mkdir -p "$tmp/bin" && cp "$G" "$tmp/bin/gpuprof"
OMPI_COMM_WORLD_SIZE=2 LD_LIBRARY_PATH=$B/lib "$tmp/bin/gpuprof" analyze \
  -o "$tmp/dbx" "$tmp/gen" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q 'MPI job of 2 processes.*no gpuprof-mpi' "$tmp/err" && [ ! -e "$tmp/dbx" ] &&
  pass "gpuprof analyze in an MPI job without gpuprof-mpi: exit 2, says why, writes nothing" ||
  { fail "gpuprof analyze in an MPI job without gpuprof-mpi (exit $rc)"; cat "$tmp/err"; }

# -j 2 on each rank; a budget of 16 MiB on each (rounds, read-back).
mpi 2 analyze -j 2 -o "$tmp/dbj" "$tmp/gen" "$tmp/sim" >/dev/null 2>"$tmp/err" &&
  same "$tmp/ref" "$tmp/dbj" "2 ranks of 2 threads" || fail "2 ranks -j 2: $(cat "$tmp/err")"
mpi 3 analyze --memory 16M -o "$tmp/dbm" "$tmp/gen" "$tmp/sim" >/dev/null 2>"$tmp/err" &&
  same "$tmp/ref" "$tmp/dbm" "3 ranks with --memory 16M" || fail "3 ranks --memory 16M: $(cat "$tmp/err")"

# Where the ranks' time went: GPUPROF_MPI_PHASES=FILE, one `STEP SECONDS`
# line per step from rank 0, in order; the ranks exchanged their trees
# (merge) and the whole run holds its passes.
GPUPROF_MPI_PHASES=$tmp/phases mpi 2 analyze -o "$tmp/dbp" "$tmp/gen" "$tmp/sim" \
  >/dev/null 2>"$tmp/err" || fail "2 ranks with GPUPROF_MPI_PHASES: $(cat "$tmp/err")"
awk -v want="init run inputs load merge values settle_values transpose settle_contexts write" '
  BEGIN { n = split(want, w, " ") }
  { if ($1 != w[NR] || NF != 2 || $2 !~ /^[0-9]+\.[0-9]+$/) bad = 1; v[$1] = $2 }
  END { exit !(NR == n && !bad && v["merge"] > 0 && v["init"] > 0 &&
               v["run"] >= v["load"] + v["values"] + v["transpose"]) }' \
  "$tmp/phases" 2>/dev/null &&
  pass "GPUPROF_MPI_PHASES: rank 0 says where the ranks' time went, step by step" ||
  { fail "GPUPROF_MPI_PHASES: rank 0 says where the ranks' time went"; cat "$tmp/phases"; }

# More ranks than files: 2 files on 4 ranks (two ranks have none).
"$G" analyze -o "$tmp/ref2" "$tmp/two" >/dev/null 2>&1 &&
  mpi 4 analyze -o "$tmp/db2f" "$tmp/two" >/dev/null 2>"$tmp/err" &&
  same "$tmp/ref2" "$tmp/db2f" "2 files on 4 ranks" || fail "2 files on 4 ranks: $(cat "$tmp/err")"

# Failures. fails_cleanly WHAT OUT PATTERN ARGS...: every rank exits 1
# (not killed by the time limit), rank 0 says PATTERN once.
fails_cleanly() {
  local what=$1 out=$2 pat=$3 rc
  shift 3
  mpi 3 analyze -o "$out" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    fail "$what: the ranks hung (killed after 120 s)"
  elif [ $rc = 0 ]; then
    fail "$what: exit status 0"
  elif [ "$(grep -c "^gpuprof-mpi: $pat" "$tmp/err")" != 1 ]; then
    fail "$what: one message \"gpuprof-mpi: $pat\""; cat "$tmp/err"
  else
    pass "$what: every rank fails (exit $rc), one message naming the file"
  fi
}
# A damaged profile, the last file (the last rank's): pass 1.
cp -r "$tmp/sim" "$tmp/bad"
last=$(ls "$tmp"/bad/*.gpuprof | tail -n 1)
printf 'XXXXXXXX' | dd of="$last" bs=1 seek=200 conv=notrunc 2>/dev/null
"$G" analyze -o "$tmp/x" "$tmp/gen" "$tmp/bad" >/dev/null 2>"$tmp/serr"
want=$(sed 's/^gpuprof: //' "$tmp/serr")
case $want in *"$last"*) ;; *) fail "gpuprof analyze names the damaged file: $want" ;; esac
fails_cleanly "a damaged profile on rank 2" "$tmp/db-bad" "rank 2: $want\$" "$tmp/gen" "$tmp/bad"
[ ! -e "$tmp/db-bad" ] && pass "a damaged profile: no database directory made" ||
  fail "a damaged profile: no database directory made ($(ls -A "$tmp/db-bad"))"
# A damaged trace (read in pass 2, with the temporary files open), into a
# new directory and over an earlier database.
rm -rf "$tmp/bad" && cp -r "$tmp/sim" "$tmp/bad"
last=$(ls "$tmp"/bad/*.gptrace | tail -n 1)
printf 'XXXXXXXX' | dd of="$last" bs=1 seek=0 conv=notrunc 2>/dev/null
fails_cleanly "a damaged trace on rank 2" "$tmp/db-badt" "rank 2: $last: " "$tmp/gen" "$tmp/bad"
[ ! -e "$tmp/db-badt" ] &&
  pass "a damaged trace: no database directory left" ||
  fail "a damaged trace: no database directory left ($(ls -A "$tmp/db-badt"))"
cp -r "$tmp/db2" "$tmp/old"
fails_cleanly "a damaged trace over an earlier database" "$tmp/old" "rank 2: $last: " "$tmp/gen" "$tmp/bad"
same "$tmp/ref" "$tmp/old" "the earlier database untouched"

# A trace damaged in its middle, on the last rank: used up to the damage,
# said once (by the rank that read it), counted in meta.db as by gpuprof
# analyze (the ranks' counts summed on rank 0): the same bytes. --strict
# refuses it on every rank.
rm -rf "$tmp/mid" && cp -r "$tmp/sim" "$tmp/mid"
last=$(ls "$tmp"/mid/*.gptrace | tail -n 1)
half=$(($(stat -c %s "$last") / 2))
printf 'XXXXXXXX' | dd of="$last" bs=1 seek="$half" conv=notrunc 2>/dev/null
"$G" analyze -o "$tmp/refmid" "$tmp/gen" "$tmp/mid" >/dev/null 2>&1 ||
  fail "gpuprof analyze takes a trace damaged in its middle"
mpi 3 analyze -o "$tmp/dbmid" "$tmp/gen" "$tmp/mid" >/dev/null 2>"$tmp/err" &&
  [ "$(grep -c "^gpuprof-mpi: $last: ignored [0-9]* bytes at the end" "$tmp/err")" = 1 ] &&
  same "$tmp/refmid" "$tmp/dbmid" "a trace damaged in its middle, 3 ranks" ||
  { fail "a trace damaged in its middle on 3 ranks"; cat "$tmp/err"; }
fails_cleanly "--strict: a trace damaged in its middle" "$tmp/dbstrict" "rank 2: $last: damaged" --strict "$tmp/gen" "$tmp/mid"

# Bad usage: exit 2 on every rank, the usage once.
mpi 2 analyze >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && [ "$(grep -c '^usage: ' "$tmp/err")" = 1 ] && pass "bad usage: exit 2, the usage once" ||
  { fail "bad usage: exit 2 (got $rc), the usage once"; cat "$tmp/err"; }
[ "$fails" -eq 0 ]
