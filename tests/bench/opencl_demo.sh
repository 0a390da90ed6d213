#!/usr/bin/env bash
# opencl_demo_overhead_ratio: the demo program (examples/opencl/jacobi)
# measured by libgpuprof over the same program with JACOBI_UNMEASURED=1 (it
# then never calls gpuprof_init), alternating runs, median of 11 each, the
# PoCL kernel cache warm for both (a first run fills it).
set -eu
B=${B:-build}
exe=$B/examples/opencl/jacobi
[ -x "$exe" ] || { echo "# opencl_demo.sh: $exe not built, skipped"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export POCL_CACHE_DIR=$tmp/pocl GPUPROF_OUTPUT=$tmp/out
run() { # prints the wall time of one run in seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }' 
}
"$exe" >/dev/null || { echo "# opencl_demo.sh: jacobi failed, skipped"; exit 0; }
on=() off=()
for _ in 1 2 3 4 5 6 7 8 9 10 11; do
  on+=("$(run "$exe")")
  off+=("$(JACOBI_UNMEASURED=1 run "$exe")")
  rm -rf "$tmp/out"
done
median() { printf '%s\n' "$@" | sort -g | sed -n 6p; }
m_on=$(median "${on[@]}")
m_off=$(median "${off[@]}")
awk -v a="$m_on" -v b="$m_off" 'BEGIN { printf "BENCH opencl_demo_overhead_ratio %.3f x\n", a / b }' 
printf 'BENCH opencl_demo_unmeasured_s %.3f s\n' "$m_off"
