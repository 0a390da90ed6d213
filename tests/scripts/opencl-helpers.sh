#!/usr/bin/env bash
# Processes the OpenCL runtime starts are not the measured program: a
# preload shim that calls gpuprof_init in every process (as a tool that
# measures unmodified programs does) is inherited by the linker PoCL runs
# to build kernels (on a cold cache: when the program builds, when the
# library saves binaries, and lazily when a kernel first runs); only
# examples/opencl/jacobi itself may write a profile.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
prog=$B/examples/opencl/jacobi
gp=$B/bin/gpuprof
if [ ! -x "$prog" ] || [ ! -x "$gp" ] || [ ! -f "$B/lib/libgpuprof.so" ]; then
  echo "SKIP opencl-helpers.sh: $prog is not built (no OpenCL headers here)"
  exit 0
fi
if [ ! -d /etc/OpenCL/vendors ] && [ -z "${OCL_ICD_VENDORS:-}" ]; then
  echo "SKIP opencl-helpers.sh: no OpenCL platform installed"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lib=$(cd "$B/lib" && pwd)
cat >"$tmp/shim.c" <<'SHIM'
#include <gpuprof.h>
__attribute__((constructor)) static void shim_init(void) { gpuprof_init(0); }
SHIM
if ! ${CC:-cc} -shared -fPIC -Iinclude -o "$tmp/libshim.so" "$tmp/shim.c" \
     -L"$lib" -lgpuprof -Wl,-rpath,"$lib" 2>"$tmp/cc.err"; then
  fail "the preload shim builds"; cat "$tmp/cc.err"
  exit 1
fi
for run in cold warm; do
  rm -rf "$tmp/out"
  if LD_PRELOAD=$tmp/libshim.so POCL_CACHE_DIR=$tmp/pocl GPUPROF_OUTPUT=$tmp/out \
     "$prog" >"$tmp/run.log" 2>&1; then
    n=$(ls "$tmp"/out/*.gpuprof 2>/dev/null | wc -l)
    progs=$(for f in "$tmp"/out/*.gpuprof; do "$gp" dump "$f" | sed -n 's/^program *//p'; done)
    if [ "$n" -eq 1 ] && echo "$progs" | grep -q "opencl/jacobi$"; then
      pass "$run PoCL cache: one profile, the program's"
    else
      fail "$run PoCL cache: one profile, the program's ($n)"
      echo "$progs" | cut -c1-120
    fi
  else
    fail "$run PoCL cache: jacobi runs with the shim"; tail -n 5 "$tmp/run.log"
  fi
done
[ "$fails" -eq 0 ]
