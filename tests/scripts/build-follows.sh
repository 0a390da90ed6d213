#!/usr/bin/env bash
# The build follows what is installed (Makefile: FEATURES and
# $(B)/gen/features.h), checked with make itself in a scratch build
# directory of this script's own:
#  - a plain `make` builds `all` (the default goal);
#  - no GPUPROF_HAVE_* on the command line (the makefiles define none), and
#    every source that tests one includes gen/features.h, itself or through
#    a header of its own folder (else it would see every feature absent);
#  - the OTF2 export's object follows the OTF2 headers: built as if they
#    were absent (HAVE_OTF2=) it holds the "built without OTF2 support"
#    fallback and features.h says OTF2 was not found; built again as
#    detected, it is recompiled and the fallback is gone; a third make
#    recompiles nothing and leaves features.h as it was (SKIP where the
#    OTF2 3 headers are not installed);
#  - an object deleted is rebuilt.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sb=$tmp/b
# A make of its own: not the jobserver of a make that runs this script.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$root" B="$sb" "$@"; }

goal=$(mk -pq 2>/dev/null | sed -n 's/^\.DEFAULT_GOAL := //p')
[ "$goal" = all ] && pass "a plain make builds all" ||
  fail "a plain make builds all, not: $goal"

cmdline=$(grep -nE -- '-D *GPUPROF_HAVE_' Makefile tests/*.mk)
[ -z "$cmdline" ] && pass "no GPUPROF_HAVE_* on the compiler's command line" ||
  fail "GPUPROF_HAVE_* on the command line: $cmdline"
# includes_features FILE: FILE, or a header of its folder it includes (at
# any depth), includes gen/features.h.
includes_features() {
  local f=$1 depth=${2:-0} h
  grep -q '^#include "gen/features.h"' "$f" && return 0
  [ "$depth" -lt 4 ] || return 1
  for h in $(sed -n 's/^#include "\([^"/]*\.h\)".*/\1/p' "$f"); do
    [ -f "$(dirname "$f")/$h" ] && includes_features "$(dirname "$f")/$h" $((depth + 1)) && return 0
  done
  return 1
}
n=0 bad=
for f in $(grep -rlE '^#\s*(if|ifdef|ifndef|elif)\b.*GPUPROF_HAVE_' lib analysis include tests --include='*.[ch]'); do
  n=$((n + 1))
  includes_features "$f" || bad="$bad $f"
done
[ "$n" -gt 0 ] && [ -z "$bad" ] && pass "the $n sources that test a GPUPROF_HAVE_* macro include gen/features.h" ||
  fail "sources that test GPUPROF_HAVE_* without gen/features.h ($n tested):$bad"

obj=$sb/obj/analysis/export/an_export_otf2.o
fallback="built without OTF2 support"
. tests/support/otf2.sh
if ! otf2_headers; then
  echo "SKIP the OTF2 export follows its headers: no OTF2 3 headers here (Debian: libotf2-trace-dev)"
else
  mk HAVE_OTF2= "$obj" >"$tmp/log1" 2>&1 || fail "make HAVE_OTF2= $obj: $(tail -n 5 "$tmp/log1")"
  grep -aq "$fallback" "$obj" && grep -qx '/\* GPUPROF_HAVE_OTF2: not found \*/' "$sb/gen/features.h" &&
    pass "built without the OTF2 headers: features.h says so, the export has the fallback" ||
    fail "built without the OTF2 headers: $(cat "$sb/gen/features.h")"
  mk "$obj" >"$tmp/log2" 2>&1 || fail "make $obj: $(tail -n 5 "$tmp/log2")"
  if grep -q 'CC .*analysis/export/an_export_otf2\.c' "$tmp/log2" && ! grep -aq "$fallback" "$obj" &&
     grep -qx '#define GPUPROF_HAVE_OTF2 1' "$sb/gen/features.h"; then
    pass "the headers found: the OTF2 export is recompiled with OTF2 support"
  else
    fail "the headers found: the OTF2 export is recompiled with OTF2 support: $(cat "$tmp/log2")"
  fi
  before=$(stat -c %y "$sb/gen/features.h")
  mk "$obj" >"$tmp/log3" 2>&1
  if ! grep -q 'CC ' "$tmp/log3" && [ "$(stat -c %y "$sb/gen/features.h")" = "$before" ]; then
    pass "nothing changed: nothing recompiled, features.h untouched"
  else
    fail "nothing changed: nothing recompiled, features.h untouched: $(cat "$tmp/log3")"
  fi
fi

replay=$sb/tests/fuzz_io_replay
io=$sb/obj/lib/io/crc32c.o
mk "$replay" >"$tmp/log4" 2>&1 || fail "make $replay: $(tail -n 5 "$tmp/log4")"
rm -f "$io"
mk "$replay" >"$tmp/log5" 2>&1
[ -f "$io" ] && pass "a deleted object is rebuilt" ||
  fail "a deleted object is rebuilt: make said: $(cat "$tmp/log5")"
[ "$fails" -eq 0 ]
