#!/usr/bin/env bash
# tools/gpu-session.sh - the checks that need an NVIDIA GPU, prepared here
# and run there in one go (a GPU machine is lent for minutes, without
# package registries: ../shared/PLATFORM.md).
#
#   tools/gpu-session.sh --prepare
#       here, on the build machine: builds the library, the command, the
#       CUDA examples and the CUPTI benchmarks (nvcc is here), copies the
#       Debian libraries the GPU machine lacks (libunwind, libdw) into
#       build/hostlibs, and prints the paths to take along.
#   tools/gpu-session.sh [OUTDIR]
#       there, from the repository root with those paths beside it: runs
#       each check under a time limit and writes its log to OUTDIR
#       (default $OUT/gpu-session, else ./gpu-session), then one summary
#       line per check. Nothing is built there but the fixture kernels
#       (pcs-vs-ncu.sh builds them with the machine's nvcc).
#
# The checks, in the order they matter:
#   cupti-gpu      kernel counts, device times against CUDA events, call
#                  paths and streams of the CUDA examples (make check-gpu)
#   pcs-vs-ncu     PC sampling yields samples in both modes, and each
#                  fixture kernel's dominant stall reason is Nsight
#                  Compute's (issue 17 item 1)
#   bench-cupti    cupti_launch_overhead_ns beside cupti_launch_floor_ns,
#                  pc_sampling_overhead_ratio_* (issue 17 item 6)
#   advise         gpuprof advise on a measured database of the fixture
#                  kernels, with the machine's nvdisasm (real SASS)
#   parallelism    GPA's parallelism optimizers on real kernels (issue 25
#                  item 5): tests/gpu/tiny_blocks (one-warp blocks: Thread
#                  Increase) and tests/gpu/few_blocks (half as many blocks
#                  as SMs: Block Increase), each timed as launched and as
#                  the advice would launch it (the achieved speedup), and
#                  measured once with PC sampling: the device and launch
#                  are known (dump, advise's note), advise suggests the
#                  optimizer, its estimate is printed beside the achieved
set -u
cd "$(dirname "$0")/.." || exit 1
B=${B:-build}
carry="$B/lib $B/bin $B/examples $B/bench/bench_cupti $B/bench/cupti_launch $B/hostlibs $B/tests/gpu"

if [ "${1:-}" = "--prepare" ]; then
  make -j2 all "$B/bench/bench_cupti" "$B/bench/cupti_launch" \
    "$B/tests/gpu/tiny_blocks" "$B/tests/gpu/few_blocks" || exit 1
  mkdir -p "$B/hostlibs"
  for l in libunwind.so.8 libunwind-x86_64.so.8 libdw.so.1; do
    src=$(ldconfig -p | awk -v l="$l" '$1 == l && /x86-64/ {print $NF; exit}')
    [ -n "$src" ] || { echo "gpu-session: $l not found here" >&2; exit 1; }
    cp -L "$src" "$B/hostlibs/$l"
  done
  for p in $carry; do
    [ -e "$p" ] || echo "gpu-session: $p is missing (nvcc not found here?)" >&2
  done
  echo "take along (the run tool's carry list):"
  for p in $carry; do echo "  $p"; done
  echo "command there: bash tools/gpu-session.sh"
  exit 0
fi

out=${1:-${OUT:+$OUT/gpu-session}}
out=${out:-gpu-session}
mkdir -p "$out" || exit 1
export LD_LIBRARY_PATH="$PWD/$B/hostlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH="$CUDA_HOME/bin:$PATH"
summary="$out/summary.txt"
: >"$summary"

# step NAME LIMIT_S COMMAND...: runs it, logs it, one summary line.
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local pass fail
  pass=$(grep -c '^ *PASS' "$out/$name.log")
  fail=$(grep -c '^ *FAIL' "$out/$name.log")
  printf '%-12s rc=%d pass=%d fail=%d %ds\n' "$name" "$rc" "$pass" "$fail" \
    $((SECONDS - t0)) | tee -a "$summary"
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
  "$CUDA_HOME/bin/nvcc" --version 2>&1 | tail -1
} >"$out/machine.txt"
cat "$out/machine.txt"

step cupti-gpu 180 env B="$B" GPUPROF_GPU_REQUIRED=1 bash tests/scripts/cupti-gpu.sh
step pcs-vs-ncu 240 env B="$B" bash tests/scripts/pcs-vs-ncu.sh --gpu serialized continuous
step bench-cupti 120 sh -c "'$B/bench/cupti_launch'; '$B/bench/bench_cupti'"
grep '^BENCH' "$out/bench-cupti.log" | tee -a "$summary"

# advise on real SASS: the fixture kernels (unmodified) measured with PC
# sampling through `gpuprof run`, analysed with the machine's nvdisasm.
adv() {
  local d
  d=$(mktemp -d) || return 1
  nvcc -O2 -lineinfo -arch=sm_90 -o "$d/stalls" \
    tests/fixtures/gpu-sm90/kernels.cu || return 1
  "$B/bin/gpuprof" run -o "$d/m" --backends cupti --pc-sampling -- \
    "$d/stalls" || return 1
  "$B/bin/gpuprof" analyze -o "$d/db" "$d/m" || return 1
  "$B/bin/gpuprof" report "$d/db" | head -80
  "$B/bin/gpuprof" advise --top 3 "$d/db"
}
export B
step advise 120 bash -c "$(declare -f adv); adv"

# par PROGRAM OPTIMIZER: the program timed as launched and as the advice
# would launch it ("fixed"), then measured with PC sampling and advised on.
par() {
  local p=$1 want=$2 d as fixed est
  d=$(mktemp -d) || return 1
  "$B/tests/gpu/$p" >"$d/as" && "$B/tests/gpu/$p" fixed >"$d/fixed" ||
    { echo "FAIL $p runs"; return 1; }
  cat "$d/as" "$d/fixed"
  as=$(awk '$1 == "MS" {print $3}' "$d/as")
  fixed=$(awk '$1 == "MS" {print $3}' "$d/fixed")
  echo "ACHIEVED $p $(awk -v a="$as" -v f="$fixed" 'BEGIN {printf "%.2fx", a / f}')"
  "$B/bin/gpuprof" run -o "$d/m" --backends cupti --pc-sampling -- \
    "$B/tests/gpu/$p" >/dev/null || { echo "FAIL $p measured"; return 1; }
  "$B/bin/gpuprof" dump "$d"/m/*.gpuprof | grep '^device' &&
    echo "PASS $p: the profile describes the device" ||
    echo "FAIL $p: no device in the profile"
  "$B/bin/gpuprof" analyze -o "$d/db" "$d/m" >/dev/null || return 1
  "$B/bin/gpuprof" advise --top 0 "$d/db" >"$d/advice"
  cat "$d/advice"
  grep -q '^  note: launch: ' "$d/advice" &&
    echo "PASS $p: advise knows the launch and the device" ||
    echo "FAIL $p: advise has no launch note"
  est=$(grep -o "$want: estimated speedup [0-9.]*x" "$d/advice" | head -n 1)
  [ -n "$est" ] && echo "PASS $p: $est (achieved $(awk -v a="$as" -v f="$fixed" 'BEGIN {printf "%.2fx", a / f}'))" ||
    echo "FAIL $p: no $want"
}
step parallelism 180 bash -c "$(declare -f par); par tiny_blocks 'Thread Increase'; par few_blocks 'Block Increase'"
echo "logs: $out"
