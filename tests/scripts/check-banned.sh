#!/usr/bin/env bash
# Library code never prints, aborts or exits on its own (curl's rule; STYLE
# "Errors"): no printf-family output, puts, perror, abort, exit or assert
# calls in lib/ or include/; messages go through the log callback. The
# analysis library may print to a FILE* its caller hands it (its _print
# functions), but must not abort, exit or assert either; analysis/cli/gpuprof.c
# is the command and may do all of these. Comments and string literals are
# ignored; snprintf/vsnprintf and static_assert are fine.
set -u
cd "$(dirname "$0")/../.." || exit 1
fails=0

# Blank comments, string and character literals (keeping line numbers).
strip() {
  perl -0pe '
    s{ ("(?:[^"\\\n]|\\.)*") | (\x27(?:[^\x27\\\n]|\\.)*\x27) | (/\*.*?\*/) | (//[^\n]*) }{
      defined $1 ? q("") : defined $2 ? q(0) : "\n" x (($3 // "") =~ tr/\n//)
    }gsex' "$1"
}
# Tracked and new (not ignored) files under the given folders; plain find
# outside a git checkout.
files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- "$@"
  else
    find "$@" -type f
  fi | grep -E '\.[ch]$' | sort -u
}
scanned=0
scan() { # pattern exclude-regex dir...
  local pat=$1 skip=$2 f hits line
  shift 2
  for f in $(files "$@"); do
    [ -f "$f" ] || continue # listed but deleted in the work tree
    if [ -n "$skip" ] && echo "$f" | grep -qE "$skip"; then continue; fi
    scanned=$((scanned + 1))
    hits=$(strip "$f" | grep -nE "$pat")
    if [ -n "$hits" ]; then
      echo "FAIL banned call in $f:"
      while IFS= read -r line; do echo "    $line"; done <<<"$hits"
      fails=$((fails + 1))
    fi
  done
}
# A call: the name not preceded by an identifier character, '.' or '->'.
pre='(^|[^A-Za-z0-9_.>])'
scan "$pre(printf|fprintf|vprintf|vfprintf|dprintf|vdprintf|puts|fputs|putchar|perror|abort|exit|_exit|_Exit|quick_exit|assert)[[:space:]]*\(" '' lib include
scan "$pre(abort|exit|_exit|_Exit|quick_exit|assert)[[:space:]]*\(" '^analysis/cli/gpuprof\.c$' analysis
if [ "$scanned" -lt 10 ]; then
  echo "FAIL only $scanned files scanned (is this the repository?)"
  fails=$((fails + 1))
fi
if [ "$fails" -eq 0 ]; then
  echo "PASS no printf/puts/perror/abort/exit/assert calls in $scanned files of lib/, include/ and the analysis library"
fi
[ "$fails" -eq 0 ]
