#!/usr/bin/env bash
# An out-of-tree backend (tests/thirdparty/tpdev.c): compiled against
# include/ alone (C99 -Wpedantic -Werror, and as C++), linked with the shared
# library, it registers three metrics -- an odd sum, a maximum without
# inclusive values, a sum on CPU call paths -- and reports three kernel
# launches "step" from one call site (occupancy/peak 10/100, 20/300,
# 30/200), one "other" from another (5/250) and host events 5 and 7 in
# region "solve". The profile must hold exactly step 60 (summed) / 300 (the
# maximum, not 600), other 5 / 250, host events 12; the database the same,
# rolled up to the root as 65 (sum) and 300 (max, not 550); the views and
# exports show the metrics by name.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
G=$B/bin/gpuprof
src=tests/thirdparty/tpdev.c
if [ ! -f "$B/lib/libgpuprof.so" ] || [ ! -x "$G" ]; then
  fail "$B/lib/libgpuprof.so and $G are built (run make first)"
  exit 1
fi
bad=$(grep -E '^[[:space:]]*#[[:space:]]*include' "$src" | grep -vE '<(gpuprof|gpuprof_backend)\.h>|<[a-z]+\.h>')
if [ -z "$bad" ]; then pass "tpdev.c includes only system headers and the public ones"; else
  fail "tpdev.c includes more than the public headers: $bad"; fi
cc=${CC:-cc}
cxx=${CXX:-c++}
if $cc -std=c99 -Wall -Wextra -Wpedantic -Werror -Iinclude -o "$tmp/tpdev" "$src" \
     -L"$B/lib" -lgpuprof -Wl,-rpath,"$PWD/$B/lib" 2>"$tmp/cc.log"; then
  pass "tpdev builds as C99 against include/ and libgpuprof.so only"
else
  fail "tpdev builds as C99 against include/ only: $(cat "$tmp/cc.log")"; exit 1
fi
if $cxx -x c++ -std=c++11 -Wall -Wextra -Werror -Iinclude -fsyntax-only "$src" 2>"$tmp/cxx.log"; then
  pass "tpdev compiles as C++11"
else
  fail "tpdev compiles as C++11: $(cat "$tmp/cxx.log")"
fi
if GPUPROF_OUTPUT=$tmp/out GPUPROF_BACKENDS= "$tmp/tpdev" >"$tmp/run.log" 2>&1; then
  pass "tpdev runs ($(cat "$tmp/run.log"))"
else
  fail "tpdev runs (exit $?): $(cat "$tmp/run.log")"; exit 1
fi
"$G" dump "$tmp"/out/*.gpuprof >"$tmp/dump" 2>&1
if grep -qE '^ +kernel step gpu\.count=3 gpu\.time=3\.000 us tpdev\.occupancy=60 tpdev\.peak_bytes=300$' "$tmp/dump"; then
  pass "profile: the kernel holds occupancy 60 (odd sum) and peak 300 (max)"
else
  fail "profile: kernel values: $(grep 'kernel step' "$tmp/dump")"
fi
if grep -qE '^ +kernel other gpu\.count=1 gpu\.time=1\.000 us tpdev\.occupancy=5 tpdev\.peak_bytes=250$' "$tmp/dump"; then
  pass "profile: the other kernel holds 5 and 250"
else
  fail "profile: other kernel values: $(grep 'kernel other' "$tmp/dump")"
fi
if grep -qE '^ +solve region\.visits=1 .* tpdev\.host_events=12$' "$tmp/dump"; then
  pass "profile: region solve holds host events 12"
else
  fail "profile: region values: $(grep ' solve ' "$tmp/dump")"
fi
"$G" report "$tmp/out" >"$tmp/rdir" 2>&1 || fail "report DIR: $(cat "$tmp/rdir")"
for want in 'tpdev.occupancy (odd sum): 65, mean 16.2 per gpu.count' \
            'tpdev.peak_bytes (max, exclusive only): 300 bytes' \
            'tpdev.host_events (sum): 12'; do
  if grep -qxF "  $want" "$tmp/rdir"; then pass "report DIR: $want"; else
    fail "report DIR: $want: $(sed -n '/registered by backends/,$p' "$tmp/rdir")"; fi
done
# Where the odd sum is largest: by its mean per launch, shown as the mean.
if sed -n '/tpdev.occupancy (odd sum)/,/tpdev.peak_bytes/p' "$tmp/rdir" |
   grep -E '^  +[0-9]+  kernel ' | sed -E 's/^ +//; s/ <- .*//' | tr '\n' '|' |
   grep -qxF '20  kernel step|5  kernel other|'; then
  pass "report DIR: tpdev.occupancy's contexts by mean: step 20, other 5"
else
  fail "report DIR: tpdev.occupancy's contexts: $(sed -n '/registered by backends/,$p' "$tmp/rdir")"
fi
"$G" analyze -o "$tmp/db" "$tmp/out" >/dev/null 2>"$tmp/err" &&
  pass "analyze" || { fail "analyze: $(cat "$tmp/err")"; exit 1; }
"$G" export --table -o "$tmp/t.csv" "$tmp/db" 2>"$tmp/err" ||
  fail "export --table: $(cat "$tmp/err")"
# col KIND NAME COLUMN: the value of COLUMN in the row of that context.
col() {
  awk -F, -v kind="$1" -v name="$2" -v c="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
    $3 == kind && $4 == name && k { print $k; exit }' "$tmp/t.csv"
}
check() { # what kind name column want
  local got
  got=$(col "$2" "$3" "$4")
  if [ "$got" = "$5" ]; then pass "database: $1 = $5"; else
    fail "database: $1 = $5 (got '$got')"; fi
}
# An odd sum shows as its mean per launch (gpu.count): step 60 / 3, other
# 5 / 1, the root 65 / 4; the peak has no inclusive column.
check "kernel occupancy (mean)" kernel "kernel step" tpdev.occupancy 20
check "kernel peak" kernel "kernel step" tpdev.peak_bytes 300
check "kernel launches" kernel "kernel step" gpu.count 3
check "other kernel occupancy (mean)" kernel "kernel other" tpdev.occupancy 5
check "other kernel peak" kernel "kernel other" tpdev.peak_bytes 250
check "root occupancy (inclusive mean)" root "<program root>" "tpdev.occupancy (inc)" 16.25
head -1 "$tmp/t.csv" | tr , '\n' | grep -qxF "tpdev.peak_bytes (inc)" &&
  fail "database: a tpdev.peak_bytes (inc) column" ||
  pass "database: no tpdev.peak_bytes (inc) column (exclusive values only)"
check "solve host events" region solve tpdev.host_events 12
check "root host events (inclusive)" root "<program root>" "tpdev.host_events (inc)" 12
"$G" report --threshold 0 --metric tpdev.occupancy --metric tpdev.peak_bytes \
  "$tmp/db" >"$tmp/report" 2>&1
want="top-down view over 1 profiles, by inclusive tpdev.occupancy; the whole: \
tpdev.occupancy 16.25 (mean per gpu.count), tpdev.peak_bytes - (exclusive values \
only); columns per metric: inclusive, share, exclusive; under 0.00% left out"
if [ "$(head -1 "$tmp/report")" = "$want" ] &&
   grep -qE '^ +20 +20 +- +300 +kernel step$' "$tmp/report" &&
   grep -qE '^ +5 +5 +- +250 +kernel other$' "$tmp/report"; then
  pass "report shows both registered metrics at the kernels: means, no inclusive peak"
else
  fail "report shows both registered metrics: $(cat "$tmp/report")"
fi
"$G" export --hatchet -o "$tmp/h.json" "$tmp/db" 2>"$tmp/err" &&
  grep -q '"tpdev.peak_bytes' "$tmp/h.json" && grep -q '"tpdev.occupancy' "$tmp/h.json" &&
  pass "hatchet export names the registered metrics" ||
  fail "hatchet export names the registered metrics: $(cat "$tmp/err")"
[ "$fails" -eq 0 ]
