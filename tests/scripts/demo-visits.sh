#!/usr/bin/env bash
# The demo's promise: `gpuprof report` on the regions example shows exactly
# the visit counts examples/regions.c documents, at the documented place in
# the region tree and on the documented number of threads; the profile file
# is named <host>-r<rank>-p<pid>.gpuprof ("rx" when no rank is known).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# No rank from the environment (CI may run under Slurm or an MPI launcher).
unset GPUPROF_RANK OMPI_COMM_WORLD_RANK PMIX_RANK PMI_RANK SLURM_PROCID MV2_COMM_WORLD_RANK
host=$(uname -n | tr '/ ' '__')

if [ ! -x "$B/examples/regions" ] || [ ! -x "$B/bin/gpuprof" ]; then
  fail "$B/examples/regions and $B/bin/gpuprof are built (run make first)"
  exit 1
fi
GPUPROF_OUTPUT=$tmp/out "$B/examples/regions" >"$tmp/run.log" 2>&1 &
pid=$!
if wait "$pid"; then
  pass "regions example runs"
else
  fail "regions example runs"; cat "$tmp/run.log"; exit 1
fi
file=$host-rx-p$pid.gpuprof
if [ "$(cd "$tmp/out" && echo *.gpuprof)" = "$file" ]; then
  pass "one profile named <host>-r<rank>-p<pid>.gpuprof ($file)"
else
  fail "one profile named $file; found: $(ls "$tmp/out")"
fi
if grep -qF "profile written to $tmp/out/$file" "$tmp/run.log"; then
  pass "the example prints where the profile was written"
else
  fail "the example prints where the profile was written"; cat "$tmp/run.log"
fi
GPUPROF_RANK=7 GPUPROF_OUTPUT=$tmp/rank "$B/examples/regions" >/dev/null 2>&1 &
pid=$!
if wait "$pid" && [ -f "$tmp/rank/$host-r7-p$pid.gpuprof" ]; then
  pass "GPUPROF_RANK=7 gives $host-r7-p$pid.gpuprof"
else
  fail "GPUPROF_RANK=7 gives $host-r7-p$pid.gpuprof; found: $(ls "$tmp/rank" 2>&1)"
fi

if ! "$B/bin/gpuprof" report "$tmp/out" >"$tmp/report" 2>&1; then
  fail "gpuprof report exits 0"; cat "$tmp/report"; exit 1
fi
pass "gpuprof report exits 0"
# Rows as "path visits threads incl": the header line gives where the
# right-aligned Threads column ends and where the indented Region column
# starts (two spaces of indent per level), so added columns do not matter.
awk '
  !hdr && /Visits/ && /Region/ { hdr = 1; rc = index($0, "Region");
    tc = index($0, "Threads"); te = tc ? tc + length("Threads") - 1 : 0; next }
  hdr && /^ *[0-9]+ / && length($0) > rc {
    name = substr($0, rc); sub(/[ \t]+$/, "", name)
    lead = name; sub(/[^ ].*$/, "", lead); name = substr(name, length(lead) + 1)
    depth = int(length(lead) / 2) + 1
    path[depth] = name; p = path[1]
    for (i = 2; i <= depth; i++) p = p "/" path[i]
    split(substr($0, 1, rc - 1), f, " ")
    thr = "?"
    if (te) { n = split(substr($0, 1, te), t, " "); thr = t[n] }
    print p, f[1], thr, f[2]
  }' "$tmp/report" >"$tmp/rows"
while read -r path visits threads; do
  row=$(awk -v p="$path" '$1 == p {print $2, $3, $4}' "$tmp/rows" | head -n 1)
  if [ "${row% *}" = "$visits $threads" ]; then
    pass "$path: $visits visits on $threads threads"
  else
    fail "$path: expected '$visits visits, $threads threads', report has '${row% *}'"
  fi
  case ${row##* } in
    0 | 0.0 | 0.00 | 0.000 | "") fail "$path: inclusive time is zero (${row##* })" ;;
  esac
done <<'ROWS'
setup 1 1
solve 30 3
solve/assemble 30 3
solve/iterate 60 3
solve/iterate/smooth 300 3
solve/iterate/residual 60 3
exchange 3000 3
output 1 1
ROWS
if [ "$(wc -l <"$tmp/rows")" -eq 8 ]; then
  pass "the report has exactly the 8 documented regions"
else
  fail "the report has exactly the 8 documented regions:"; cat "$tmp/rows"
fi
if grep -q '^1 profile, 4 threads' "$tmp/report"; then
  pass "report summary: 1 profile, 4 threads"
else
  fail "report summary: 1 profile, 4 threads"; head -n 3 "$tmp/report"
fi
[ "$fails" -eq 0 ] || { echo "--- report:"; cat "$tmp/report"; }
[ "$fails" -eq 0 ]
