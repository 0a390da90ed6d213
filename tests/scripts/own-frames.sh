#!/usr/bin/env bash
# The library's own frames never stand in a call path: examples/opencl/
# jacobi (linked with libgpuprof.so, measured through the OpenCL layer)
# writes a profile with GPU work, GPU_IDLE_CAUSE samples and call paths
# through its hooks (clFinish, clBuildProgram, ...), and no frame of
# libgpuprof.so or libgpuprof-cl-layer.so is among them.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
prog=$B/examples/opencl/jacobi
gp=$B/bin/gpuprof
if [ ! -x "$prog" ] || [ ! -x "$gp" ]; then
  echo "SKIP own-frames.sh: $prog is not built (no OpenCL headers here)"
  exit 0
fi
if [ ! -d /etc/OpenCL/vendors ] && [ -z "${OCL_ICD_VENDORS:-}" ]; then
  echo "SKIP own-frames.sh: no OpenCL platform installed"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if POCL_CACHE_DIR=$tmp/pocl GPUPROF_OUTPUT=$tmp/out "$prog" >"$tmp/run.log" 2>&1 &&
   prof=$(ls "$tmp"/out/*.gpuprof 2>/dev/null) && "$gp" dump "$prof" >"$tmp/dump" 2>&1; then
  pass "jacobi runs measured and its profile reads back"
else
  fail "jacobi runs measured"; tail -n 20 "$tmp/run.log" "$tmp/dump" 2>/dev/null
  exit 1
fi
if grep -q "kernel .*gpu.count=" "$tmp/dump" && grep -q "blame.gpu_idle_cause=" "$tmp/dump"; then
  pass "the profile has kernels and GPU_IDLE_CAUSE samples"
else
  fail "the profile has kernels and GPU_IDLE_CAUSE samples"
fi
own=$(grep -cE '/libgpuprof(\.so|-cl-layer\.so)' "$tmp/dump")
if [ "$own" -eq 0 ]; then
  pass "no frame of libgpuprof.so or its OpenCL layer in any call path"
else
  fail "no frame of the library in any call path ($own found)"
  grep -E '/libgpuprof(\.so|-cl-layer\.so)' "$tmp/dump" | head -n 5
fi
[ "$fails" -eq 0 ]
