#!/usr/bin/env bash
# Exported symbols = version script = header declarations, for both
# libraries; only gpuprof_ names exported; no GPU vendor library needed;
# the SONAMEs. Prints PASS/FAIL lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

check_lib() { # so map header macro soname
  local so=$1 map=$2 header=$3 macro=$4 soname=$5 exported mapped declared
  if [ ! -f "$so" ]; then fail "$so not built"; return; fi
  exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | sort -u)
  mapped=$(sed -n '/global:/,/local:/p' "$map" | grep -oE '^[[:space:]]*[a-z_0-9]+;' | tr -d ' ;' | sort -u)
  declared=$(grep -E "^$macro " "$header" | grep -oE '[a-z_0-9]+\(' | head -n 10000 | tr -d '(' | grep -E '^gpuprof_' | sort -u)
  if [ "$exported" = "$mapped" ]; then pass "$(basename "$so"): exported = $map"; else
    fail "$(basename "$so"): exported != $map"; diff <(echo "$exported") <(echo "$mapped"); fi
  if [ "$mapped" = "$declared" ]; then pass "$map = $header declarations"; else
    fail "$map != $header declarations"; diff <(echo "$mapped") <(echo "$declared"); fi
  if echo "$exported" | grep -vqE '^gpuprof_'; then fail "$(basename "$so") exports non-gpuprof_ names"; else
    pass "$(basename "$so") exports only gpuprof_ names"; fi
  if readelf -d "$so" | grep -q "SONAME.*\[$soname\]"; then pass "SONAME $soname"; else
    fail "SONAME of $so is not $soname"; fi
  if readelf -d "$so" | grep NEEDED | grep -qiE 'cuda|cupti|opencl|libze|papi'; then
    fail "$(basename "$so") needs a GPU vendor library"; else pass "$(basename "$so") needs no GPU vendor library"; fi
}

major=$(sed -n 's/^#define GPUPROF_VERSION_MAJOR \([0-9]*\).*/\1/p' include/gpuprof.h)
check_lib "$B/lib/libgpuprof.so" lib/libgpuprof.map include/gpuprof.h GPUPROF_API "libgpuprof.so.$major"
check_lib "$B/lib/libgpuprof-analysis.so" analysis/libgpuprof-analysis.map include/gpuprof_analysis.h \
  GPUPROF_AN_API "libgpuprof-analysis.so.$major"
[ "$fails" -eq 0 ]
