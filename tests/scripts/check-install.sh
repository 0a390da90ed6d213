#!/usr/bin/env bash
# `make install DESTDIR=...`, then build the regions example the way a user
# would (pkg-config: shared, with libgpuprof.a, and a fully static program
# from `pkg-config --static`, whose libunwind needs liblzma), run it, read
# its output with the installed command; the public headers compile alone
# as C99 and C++; uninstall removes it all.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
cc=${CC:-cc}
cxx=${CXX:-c++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
prefix=/usr/local

if make -s install DESTDIR="$dest" PREFIX=$prefix >"$tmp/install.log" 2>&1; then
  pass "make install DESTDIR"
else
  fail "make install DESTDIR"; cat "$tmp/install.log"; exit 1
fi
export PKG_CONFIG_PATH=$dest$prefix/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
# shellcheck disable=SC2086 # flag lists split on purpose
if flags=$(pkg-config --cflags --libs gpuprof) &&
   $cc -o "$tmp/regions" examples/regions.c $flags -pthread -lm 2>"$tmp/cc.log"; then
  pass "example builds through pkg-config ($flags)"
else
  fail "example builds through pkg-config"; cat "$tmp/cc.log"
fi
# A static link, the way pkg-config --static describes it.
static_libs=$(pkg-config --static --libs-only-l gpuprof | sed 's/-lgpuprof//')
cflags=$(pkg-config --cflags gpuprof)
# shellcheck disable=SC2086 # flag lists split on purpose
if $cc -o "$tmp/regions-static" examples/regions.c $cflags \
     "$dest$prefix/lib/libgpuprof.a" $static_libs -pthread -lm 2>"$tmp/cc2.log" &&
   GPUPROF_OUTPUT=$tmp/out-static "$tmp/regions-static" >/dev/null 2>&1 &&
   ls "$tmp"/out-static/*.gpuprof >/dev/null 2>&1; then
  pass "static link with pkg-config --static runs and writes a profile"
else
  fail "static link with pkg-config --static"; cat "$tmp/cc2.log"
fi
# A fully static program: every library from pkg-config --static alone
# (libunwind and libzstd through Requires.private, their own needs with
# them). SKIP where the C library has no static archive.
if printf 'int main(void){return 0;}\n' | $cc -static -x c - -o "$tmp/static-probe" 2>/dev/null; then
  # shellcheck disable=SC2046 # flag lists split on purpose
  if $cc -static -o "$tmp/regions-full" examples/regions.c $(pkg-config --static --cflags --libs gpuprof) \
       -lm 2>"$tmp/cc3.log" &&
     GPUPROF_OUTPUT=$tmp/out-full "$tmp/regions-full" >/dev/null 2>&1 &&
     ls "$tmp"/out-full/*.gpuprof >/dev/null 2>&1; then
    pass "a -static program from pkg-config --static --libs gpuprof alone runs and writes a profile"
  else
    fail "a -static program from pkg-config --static --libs gpuprof"; grep -v 'warning: Using' "$tmp/cc3.log" | head -n 5
  fi
else
  echo "SKIP -static program (no static C library)"
fi
if LD_LIBRARY_PATH=$dest$prefix/lib GPUPROF_OUTPUT=$tmp/out "$tmp/regions" >"$tmp/run.log" 2>&1 &&
   ls "$tmp"/out/*.gpuprof >/dev/null 2>&1; then
  pass "installed example runs and writes a profile"
else
  fail "installed example runs and writes a profile"; cat "$tmp/run.log"
fi
if LD_LIBRARY_PATH=$dest$prefix/lib "$dest$prefix/bin/gpuprof" report "$tmp/out" >"$tmp/report.log" 2>&1 &&
   grep -q 'smooth' "$tmp/report.log"; then
  pass "installed gpuprof reports the run"
else
  fail "installed gpuprof reports the run"; cat "$tmp/report.log"
fi
# The analysis library through its own pkg-config file.
cat >"$tmp/an.c" <<'EOF'
#include <gpuprof_analysis.h>
#include <stdio.h>
int main(void)
{
    const char *e = gpuprof_an_last_error();
    return e != NULL && puts("linked") >= 0 ? 0 : 1;
}
EOF
# shellcheck disable=SC2086 # flag lists split on purpose
if anflags=$(pkg-config --cflags --libs gpuprof-analysis) &&
   $cc -o "$tmp/an" "$tmp/an.c" $anflags 2>"$tmp/an.log" &&
   LD_LIBRARY_PATH=$dest$prefix/lib "$tmp/an" >>"$tmp/an.log" 2>&1; then
  pass "a program links libgpuprof-analysis through pkg-config and runs"
else
  fail "a program links libgpuprof-analysis through pkg-config and runs"; cat "$tmp/an.log"
fi
ver() { sed -n "s/^#define GPUPROF_VERSION_$1 \([0-9]*\).*/\1/p" include/gpuprof.h; }
version="$(ver MAJOR).$(ver MINOR).$(ver PATCH)"
if [ "$(pkg-config --modversion gpuprof)" = "$version" ] &&
   [ "$(pkg-config --modversion gpuprof-analysis)" = "$version" ]; then
  pass "pkg-config versions match the header ($version)"
else
  fail "pkg-config versions match the header ($version)"
fi
for h in gpuprof.h gpuprof_backend.h gpuprof_analysis.h; do
  if printf '#include <%s>\nint main(void){return 0;}\n' "$h" |
       $cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$dest$prefix/include" -x c - -o /dev/null 2>"$tmp/h.log" &&
     printf '#include <%s>\nint main(){return 0;}\n' "$h" |
       $cxx -Wall -Wextra -Werror -I"$dest$prefix/include" -x c++ - -o /dev/null 2>>"$tmp/h.log"; then
    pass "$h compiles alone as C99 and C++"
  else
    fail "$h compiles alone as C99 and C++"; cat "$tmp/h.log"
  fi
done
make -s uninstall DESTDIR="$dest" PREFIX=$prefix >/dev/null 2>&1
left=$(find "$dest" -type f -o -type l)
if [ -z "$left" ]; then pass "make uninstall removes every file"; else fail "make uninstall left: $left"; fi
[ "$fails" -eq 0 ]
