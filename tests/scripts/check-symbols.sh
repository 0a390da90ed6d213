#!/usr/bin/env bash
# The export list is a contract (doc/ABI.md). For libgpuprof and
# libgpuprof-analysis: exported symbols (nm -D) = global names of the version
# script = functions declared with the API macro in the public header; every
# export carries a version node of the map; only gpuprof_ names are exported,
# and the static archive defines only gpuprof_ globals (so a static link
# collides with nothing); no GPU vendor library is NEEDED; the SONAME is
# lib<name>.so.MAJOR. Besides, libgpuprof exports unversioned exactly the
# names of lib/exports.txt and lib/host/exports.txt (the C library
# functions it interposes: dlclose, the pthread functions, ompt_start_tool).
# Prints PASS/FAIL lines (SKIP for a library that does not exist yet).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
listdiff() { # label-a list-a label-b list-b
  diff <(echo "$2") <(echo "$4") |
    awk -v a="$1" -v b="$3" '/^</ {print "    only in " a ": " $2} /^>/ {print "    only in " b ": " $2}'
}

# Defined dynamic symbols, as name@@NODE (NODE empty when unversioned).
exports() {
  nm -D --defined-only "$1" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' | sort -u
}
# Global names of a version script, and its node names.
map_names() {
  perl -0pe 's{/\*.*?\*/}{}gs; s{#[^\n]*}{}g' "$1" |
    awk '/global:/ {g = 1; next} /local:/ {g = 0} /}/ {g = 0}
         g { gsub(/[ \t;]/, ""); if ($0 != "") print }' | sort -u
}
map_nodes() {
  perl -0pe 's{/\*.*?\*/}{}gs' "$1" | grep -oE '^[[:space:]]*[A-Z][A-Z0-9_]*_[0-9]+\.[0-9]+[[:space:]]*\{' |
    tr -d ' \t{' | sort -u
}
# Functions declared with an API macro in a header (comments and
# preprocessor lines removed, declarations may span lines).
declared() {
  perl -0ne '
    s{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g; s{^[ \t]*#[^\n]*(\\\n[^\n]*)*}{}gm;
    while (/\b(GPUPROF_API|GPUPROF_AN_API|GPUPROF_ANALYSIS_API)\b([^;{}()]*?)\b([A-Za-z_]\w*)\s*\(/g) {
      print "$3\n";
    }' "$1" | sort -u
}

check_lib() { # so map header soname [optional ["interposed-lists"]]
  local so=$1 map=$2 header=$3 soname=$4 optional=${5:-} extra=${6:-} name exported_v exported mapped decl nodes bad a own f
  own=""
  for f in $extra; do own=$(printf '%s\n%s' "$own" "$(grep -v '^#' "$f")"); done
  own=$(echo "$own" | grep . | sort -u)
  name=$(basename "$so")
  if [ ! -f "$so" ] || [ ! -f "$map" ] || [ ! -f "${header%% *}" ]; then
    if [ -n "$optional" ]; then echo "SKIP $name: library, map or header not there yet"; return; fi
    fail "$name, $map and $header exist (run make first)"
    return
  fi
  exported_v=$(exports "$so")
  if [ -n "$extra" ]; then # the interposed names: unversioned, exactly these
    a=$(echo "$exported_v" | grep -v '@' | sort -u)
    if [ "$a" = "$own" ]; then
      pass "$name: exports unversioned exactly $extra ($(echo "$own" | wc -l) names)"
    else
      fail "$name: unversioned exports != $extra"; listdiff "nm -D" "$a" "$extra" "$own"
    fi
    exported_v=$(echo "$exported_v" | grep '@')
  fi
  exported=$(echo "$exported_v" | sed 's/@.*//' | sort -u)
  mapped=$(map_names "$map")
  decl=$(for h in $header; do declared "$h"; done | sort -u)
  if [ -z "$exported" ] || [ -z "$mapped" ] || [ -z "$decl" ]; then
    fail "$name: found nothing to compare (exports $(echo "$exported" | grep -c .), map $(echo "$mapped" | grep -c .), header $(echo "$decl" | grep -c .))"
    return
  fi
  if [ "$exported" = "$mapped" ]; then
    pass "$name: exported symbols = $map ($(echo "$exported" | wc -l) names)"
  else
    fail "$name: exported symbols != $map"; listdiff "nm -D" "$exported" "$map" "$mapped"
  fi
  if [ "$mapped" = "$decl" ]; then
    pass "$map = API declarations in $header"
  else
    fail "$map != API declarations in $header"; listdiff "$map" "$mapped" "$header" "$decl"
  fi
  nodes=$(map_nodes "$map")
  bad=""
  while read -r a; do
    case $a in
      *@@*) echo "$nodes" | grep -qxF "${a#*@@}" || bad="$bad $a" ;;
      *) bad="$bad $a" ;;
    esac
  done <<<"$exported_v"
  if [ -z "$bad" ] && [ -n "$nodes" ]; then
    pass "$name: every export carries a version node of $map ($(echo "$nodes" | tr '\n' ' ' | sed 's/ $//'))"
  else
    fail "$name: exports without a version node of $map:$bad"
  fi
  bad=$(echo "$exported" | grep -vE '^gpuprof_' | tr '\n' ' ')
  if [ -z "$bad" ]; then pass "$name exports only gpuprof_ names"; else
    fail "$name exports non-gpuprof_ names: $bad"; fi
  if readelf -d "$so" | grep -qF "SONAME" && readelf -d "$so" | grep SONAME | grep -qF "[$soname]"; then
    pass "$name: SONAME $soname"
  else
    fail "$name: SONAME is not $soname ($(readelf -d "$so" | grep SONAME))"
  fi
  bad=$(readelf -d "$so" | grep NEEDED | grep -iE 'cuda|cupti|opencl|libze|papi|nvidia|level_zero')
  if [ -z "$bad" ]; then pass "$name needs no GPU vendor library"; else
    fail "$name needs a GPU vendor library: $bad"; fi
}

major=$(sed -n 's/^#define GPUPROF_VERSION_MAJOR \([0-9]*\).*/\1/p' include/gpuprof.h)
check_lib "$B/lib/libgpuprof.so" lib/libgpuprof.map "include/gpuprof.h include/gpuprof_backend.h" "libgpuprof.so.$major" "" "lib/exports.txt lib/host/exports.txt"
check_lib "$B/lib/libgpuprof-analysis.so" analysis/libgpuprof-analysis.map \
  include/gpuprof_analysis.h "libgpuprof-analysis.so.$major" optional

# A static link brings every global of the archive into the program: they
# must all be gpuprof_ (public) or gpuprof__ (internal) names.
if [ -f "$B/lib/libgpuprof.a" ]; then
  bad=$(nm -g --defined-only "$B/lib/libgpuprof.a" 2>/dev/null | awk 'NF == 3 {print $3}' |
    grep -vE '^gpuprof_' | sort -u | tr '\n' ' ')
  if [ -z "$bad" ]; then pass "libgpuprof.a defines only gpuprof_ globals"; else
    fail "libgpuprof.a defines globals without the gpuprof_ prefix: $bad"; fi
else
  fail "$B/lib/libgpuprof.a exists (run make first)"
fi
[ "$fails" -eq 0 ]
