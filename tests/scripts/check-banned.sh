#!/usr/bin/env bash
# Library code never prints, aborts or exits on its own (curl's rule):
# no printf/fprintf/puts/perror/abort/exit/assert calls in lib/ or include/.
# The analysis library may print only to the FILE* a caller hands it (its
# _print functions); it must not abort, exit or assert either.
set -u
cd "$(dirname "$0")/../.." || exit 1
fails=0
strip() { # drop comments and string literals, keep line numbers
  sed -E 's://.*$::; s:/\*.*\*/::g; s:"([^"\\]|\\.)*":"":g' "$1"
}
scan() { # pattern dir...
  local pat=$1 f hits; shift
  for f in $(git ls-files "$@" 2>/dev/null | grep -E '\.[ch]$'); do
    hits=$(strip "$f" | grep -nE "$pat" | grep -vE 'snprintf|vsnprintf|static_assert|_Static_assert' || true)
    if [ -n "$hits" ]; then echo "FAIL banned call in $f:"; echo "$hits"; fails=$((fails + 1)); fi
  done
}
scan '(^|[^a-z_.>])(printf|fprintf|puts|perror|abort|exit|assert)[[:space:]]*\(' lib include
scan '(^|[^a-z_.>])(abort|exit|_exit|assert)[[:space:]]*\(' analysis ':!analysis/gpuprof.c'
[ "$fails" -eq 0 ] && echo "PASS no printf/abort/exit/assert in lib/, include/ or the analysis library"
[ "$fails" -eq 0 ]
