#!/usr/bin/env bash
# The demo's promise: `gpuprof report` on the regions example shows exactly
# the visit counts the example documents, and the profile file is named
# <host>-r<rank>-p<pid>.gpuprof.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GPUPROF_OUTPUT=$tmp/out "$B/examples/regions" >"$tmp/run.log" 2>&1 || { echo "FAIL regions example runs"; cat "$tmp/run.log"; exit 1; }
echo "PASS regions example runs"
pid=$(sed -n 's/.*-p\([0-9]*\)\.gpuprof$/\1/p' "$tmp/run.log")
if [ -n "$pid" ] && [ -f "$tmp/out/$(hostname)-rx-p$pid.gpuprof" ]; then
  echo "PASS profile named <host>-r<rank>-p<pid>.gpuprof"
else
  echo "FAIL profile named <host>-r<rank>-p<pid>.gpuprof"; ls "$tmp/out"; fails=$((fails + 1))
fi
"$B/bin/gpuprof" report "$tmp/out" >"$tmp/report" 2>&1 || { echo "FAIL gpuprof report"; cat "$tmp/report"; exit 1; }
# Table rows: Visits Incl(2 fields) Excl(2 fields) Incl% Threads Region...
# expected "path-depth name visits threads"
while read -r depth name visits threads; do
  row=$(awk -v d="$depth" -v n="$name" '
    /^ +[0-9]+ / { ind = index($0, n); lead = substr($0, 1, ind - 1);
      # the name starts after the Threads column and 2*(depth-1) spaces
      if ($NF == n && substr(lead, length(lead) - 2*(d-1) - 1) ~ /^ +$/) print $1, $7 }' "$tmp/report" | head -n 1)
  if [ "$row" = "$visits $threads" ]; then
    echo "PASS $name: $visits visits in $threads threads"
  else
    echo "FAIL $name: expected '$visits $threads', report has '$row'"; fails=$((fails + 1))
  fi
done <<'ROWS'
1 setup 1 1
1 solve 30 3
2 assemble 30 3
2 iterate 60 3
3 smooth 300 3
3 residual 60 3
1 exchange 3000 3
1 output 1 1
ROWS
grep -q '^1 profile, 4 threads' "$tmp/report" && echo "PASS 1 profile, 4 threads" ||
  { echo "FAIL summary line"; head -n 3 "$tmp/report"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ]
