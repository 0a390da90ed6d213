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
files() { # dir... (git pathspecs; plain find outside a checkout)
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files "$@"
  else
    for d in "$@"; do case $d in :*) ;; *) find "$d" -type f ;; esac; done | grep -v '^analysis/gpuprof.c$'
  fi
}
scanned=0
scan() { # pattern dir...
  local pat=$1 f hits; shift
  for f in $(files "$@" | grep -E '\.[ch]$'); do
    scanned=$((scanned + 1))
    hits=$(strip "$f" | grep -nE "$pat" | grep -vE 'snprintf|vsnprintf|static_assert|_Static_assert' || true)
    if [ -n "$hits" ]; then echo "FAIL banned call in $f:"; echo "$hits"; fails=$((fails + 1)); fi
  done
}
scan '(^|[^a-z_.>])(printf|fprintf|puts|perror|abort|exit|assert)[[:space:]]*\(' lib include
scan '(^|[^a-z_.>])(abort|exit|_exit|assert)[[:space:]]*\(' analysis ':!analysis/gpuprof.c'
if [ "$scanned" -lt 10 ]; then echo "FAIL only $scanned files scanned"; fails=$((fails + 1)); fi
[ "$fails" -eq 0 ] && echo "PASS no printf/abort/exit/assert in $scanned files of lib/, include/ and the analysis library"
[ "$fails" -eq 0 ]
