#!/usr/bin/env bash
# libgpuprof.so's dlclose stands in front of the C library's and keeps call
# paths right when a library is closed and another opened at its address:
# tests/run/dl_reuse.c launches 100 kernels from unwind_lib_a.so, closes it,
# opens unwind_lib_b.so (same bytes, same address) and launches 100 from
# there; linked with -lgpuprof and again with libgpuprof.so preloaded (as
# `gpuprof run` may), each kernel must stand beneath its own library, with
# exact counts.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
prog=$B/tests/run_dl_reuse
gp=$B/bin/gpuprof
if [ ! -x "$prog" ] || [ ! -x "$gp" ]; then
  echo "SKIP dlclose.sh: $prog or $gp is not built"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The library each kernel stands beneath: "kernel_a unwind_lib_a.so 100".
beneath() {
  awk '/unwind_lib_[ab]\.so/ { lib = $1; sub(/^.*\//, "", lib); sub(/\+.*$/, "", lib) }
       $1 == "kernel" { c = $3; sub(/^gpu\.count=/, "", c); print $2, lib, c }' "$1"
}
for mode in linked preloaded; do
  out=$tmp/$mode
  pre=""
  [ "$mode" = preloaded ] && pre=$(readlink -f "$B/lib/libgpuprof.so.0")
  if ! LD_PRELOAD=$pre GPUPROF_OUTPUT=$out "$prog" "$B/tests" 100 >"$tmp/$mode.log" 2>&1; then
    fail "$mode: dl_reuse runs"; cat "$tmp/$mode.log"; continue
  fi
  if grep -q "^dlclose from .*/libgpuprof\.so" "$tmp/$mode.log"; then
    pass "$mode: the process's dlclose is libgpuprof.so's"
  else
    fail "$mode: the process's dlclose is libgpuprof.so's ($(head -n 1 "$tmp/$mode.log"))"
  fi
  if ! grep -q "^same address" "$tmp/$mode.log"; then
    echo "SKIP $mode: unwind_lib_b.so was loaded at another address"
    continue
  fi
  if ! "$gp" dump "$out"/*.gpuprof >"$tmp/$mode.dump" 2>&1; then
    fail "$mode: the profile reads back"; continue
  fi
  got=$(beneath "$tmp/$mode.dump" | sort | tr '\n' ';')
  want="kernel_a unwind_lib_a.so 100;kernel_b unwind_lib_b.so 100;"
  if [ "$got" = "$want" ]; then
    pass "$mode: each library's 100 kernels beneath it"
  else
    fail "$mode: each library's 100 kernels beneath it (got '$got')"
  fi
done
[ "$fails" -eq 0 ]
