#!/usr/bin/env bash
# Backends are plug-ins on the public interface (doc/BACKENDS.md, issue 14):
#  - a file under lib/backends/<name>/ includes only public headers
#    (include/gpuprof*.h), files of its own folder and the backends' shared
#    kit (lib/backends/kit: header-only, itself built on public headers and
#    the C library alone) and the build's list of what is installed
#    ($B/gen/features.h: macros only): never lib/core, lib/io or another
#    backend;
#  - lib/core names no backend: no include of lib/backends, no backend's
#    gpuprof__<name>_ symbol, no GPUPROF_HAVE_<NAME> switch;
#  - the core registers the built-in backends from the list the build writes
#    ($B/gen/backends.h): each entry is a folder of lib/backends whose
#    registration symbol the library defines, and every registration symbol
#    the library defines is listed.
# The first two checks also run on a scratch tree with one offending line
# each, so they are seen to fail. Prints PASS/FAIL lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# bad_includes ROOT: "file:line: text" for every include a backend may not
# have (quoted includes: public headers or its own folder only).
bad_includes() {
  local root=$1 dir name f
  for dir in "$root"/lib/backends/*/; do
    name=$(basename "$dir")
    for f in "$dir"*.[ch]; do
      [ -f "$f" ] || continue
      grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
        while IFS= read -r line; do
          inc=$(printf '%s' "$line" | sed -E 's/.*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1/')
          case $inc in
            gpuprof*.h) [ -f "$root/include/$inc" ] && continue ;;
            backends/"$name"/*) continue ;;
            backends/kit/*) [ -f "$root/lib/$inc" ] && continue ;;
            gen/features.h) continue ;;
            */*) ;;
            *) [ -f "$dir$inc" ] && continue ;;
          esac
          echo "${f#"$root"/}:$line"
        done
    done
  done
}

# core_names_backend ROOT: lines of lib/core that name a backend.
core_names_backend() {
  local root=$1 dir name up
  grep -nE '#[[:space:]]*include[[:space:]]*"backends/' "$root"/lib/core/*.[ch] 2>/dev/null
  for dir in "$root"/lib/backends/*/; do
    name=$(basename "$dir")
    up=$(echo "$name" | tr a-z A-Z)
    grep -nE "\\bgpuprof__(backend_)?${name}_[a-z_]+|\\bGPUPROF_HAVE_${up}\\b" \
      "$root"/lib/core/*.[ch] 2>/dev/null
  done
}

out=$(bad_includes .)
if [ -z "$out" ]; then
  pass "lib/backends/*: only public headers and the backend's own files are included"
else
  fail "lib/backends/* include what is not theirs:"; echo "$out" | sed 's/^/    /'
fi
out=$(core_names_backend .)
if [ -z "$out" ]; then
  pass "lib/core names no backend"
else
  fail "lib/core names a backend:"; echo "$out" | sed 's/^/    /'
fi

# The checks catch what they are for (a scratch copy with one bad line each).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include" "$tmp/lib/core" "$tmp/lib/backends/fake" "$tmp/lib/backends/other" \
  "$tmp/lib/backends/kit"
cp include/gpuprof*.h "$tmp/include/"
printf '#include "gpuprof_backend.h"\n#include "backends/fake/fake.h"\n#include "fake.h"\n#include "backends/kit/k.h"\n' >"$tmp/lib/backends/fake/ok.c"
printf '#include "gpuprof_backend.h"\n' >"$tmp/lib/backends/kit/k.h"
: >"$tmp/lib/backends/fake/fake.h"
printf 'int x;\n' >"$tmp/lib/core/clean.c"
if [ -z "$(bad_includes "$tmp")" ] && [ -z "$(core_names_backend "$tmp")" ]; then
  pass "a clean scratch tree passes both checks"
else
  fail "a clean scratch tree passes both checks: $(bad_includes "$tmp") $(core_names_backend "$tmp")"
fi
for bad in '#include "core/internal.h"' '#include "io/io.h"' \
           '#include "backends/other/x.h"' '#include "../../core/gpu.h"'; do
  printf '%s\n' "$bad" >"$tmp/lib/backends/fake/bad.c"
  if bad_includes "$tmp" | grep -qF "bad.c:1:"; then
    pass "detected: a backend file with $bad"
  else
    fail "not detected: a backend file with $bad"
  fi
done
rm -f "$tmp/lib/backends/fake/bad.c"
for bad in '#include "core/internal.h"' '#include "backends/fake/fake.h"'; do
  printf '%s\n' "$bad" >"$tmp/lib/backends/kit/bad.h"
  if bad_includes "$tmp" | grep -qF "kit/bad.h:1:"; then
    pass "detected: the backends' kit with $bad"
  else
    fail "not detected: the backends' kit with $bad"
  fi
done
rm -f "$tmp/lib/backends/kit/bad.h"
printf '#include "backends/kit/missing.h"\n' >"$tmp/lib/backends/fake/bad.c"
if bad_includes "$tmp" | grep -qF "bad.c:1:"; then
  pass "detected: a backend file including a kit header that does not exist"
else
  fail "not detected: a backend file including a kit header that does not exist"
fi
rm -f "$tmp/lib/backends/fake/bad.c"
for bad in '#include "backends/fake/fake.h"' 'void gpuprof__fake_register(void);' \
           '#ifdef GPUPROF_HAVE_FAKE' 'gpuprof__backend_other_register();'; do
  printf '%s\n' "$bad" >"$tmp/lib/core/bad.c"
  if core_names_backend "$tmp" | grep -qF "bad.c:1:"; then
    pass "detected: lib/core with $bad"
  else
    fail "not detected: lib/core with $bad"
  fi
done

# The generated registration list against what the library defines.
gen=$B/gen/backends.h
lib=$B/lib/libgpuprof.a
if [ ! -f "$gen" ] || [ ! -f "$lib" ]; then
  fail "$gen and $lib exist (run make first)"
else
  listed=$(sed -n 's/^GPUPROF_BUILTIN(\([a-z0-9_]*\))$/\1/p' "$gen" | sort)
  defined=$(nm -g --defined-only "$lib" 2>/dev/null |
    sed -n 's/.* T gpuprof__backend_\([a-z0-9_]*\)_register$/\1/p' | sort -u)
  missing=""
  for n in $listed; do [ -d "lib/backends/$n" ] || missing="$missing $n"; done
  if [ -z "$missing" ]; then
    pass "every entry of $gen is a folder of lib/backends ($(echo $listed))"
  else
    fail "entries of $gen without a folder of lib/backends:$missing"
  fi
  if [ "$listed" = "$defined" ]; then
    pass "$gen lists exactly the registration symbols libgpuprof defines"
  else
    fail "$gen lists [$(echo $listed)], libgpuprof defines registrations of [$(echo $defined)]"
  fi
  undef=$(nm "$B/obj/lib/core/backend.o" 2>/dev/null |
    sed -n 's/^ *U gpuprof__backend_\([a-z0-9_]*\)_register$/\1/p' | sort -u)
  if [ "$undef" = "$listed" ]; then
    pass "the core calls exactly the generated list's registrations"
  else
    fail "the core calls registrations of [$(echo $undef)], the list has [$(echo $listed)]"
  fi
fi
[ "$fails" -eq 0 ]
