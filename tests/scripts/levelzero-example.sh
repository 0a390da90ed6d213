#!/usr/bin/env bash
# examples/levelzero/vadd on the test tree's fake Level Zero driver
# (tests/fakeze, loaded by the real loader through ZE_ENABLE_ALT_DRIVERS),
# with and without the loader's tracing layer: the lines it prints agree
# with the scripted kernel time and with the driver's own record of what
# ran (FAKEZE_TRACE); without a driver it says so and exits 2. SKIP where
# the example or the driver is not built (no Level Zero headers, or no
# clang-15/llvm-spirv-15 for its SPIR-V).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
. tests/support/fakeze.sh
prog=$B/examples/levelzero/vadd
ze_need levelzero-example.sh "$prog" "$prog.spv"

for layer in 0 1; do
  what="tracing layer $layer"
  rm -f "$tmp/ops"
  if ! env ZE_ENABLE_TRACING_LAYER=$layer ZE_ENABLE_ALT_DRIVERS="$drv" \
      FAKEZE_KERNELS=vadd=1500000 FAKEZE_TS_START=$(( (1 << 32) - 37500 )) FAKEZE_TRACE="$tmp/ops" GPUPROF_OUTPUT="$tmp/m$layer" \
      "$prog" >"$tmp/out" 2>"$tmp/err"; then
    fail "$what: vadd exited non-zero: $(cat "$tmp/err")"
    continue
  fi
  grep -qx 'DEVICE fakeze GPU 0' "$tmp/out" && pass "$what: DEVICE line" ||
    fail "$what: no DEVICE line: $(cat "$tmp/out")"
  # 1.5 ms at 12.5 MHz is 18750 ticks: exactly 1500000 ns back, whether
  # or not the 32-bit kernel timestamps wrapped (3 ms after zeInit here).
  grep -qx 'KERNEL vadd launches 4 device_ns 1500000,1500000,1500000,1500000' "$tmp/out" &&
    pass "$what: kernel times from the 32-bit timestamps" ||
    fail "$what: KERNEL line: $(grep KERNEL "$tmp/out")"
  grep -qx 'RESULT unchecked (fake driver: kernels compute nothing)' "$tmp/out" &&
    pass "$what: result not claimed on the fake driver" || fail "$what: RESULT line"
  k=$(grep -c '^op=kernel .* name=vadd ' "$tmp/ops")
  h2d=$(grep -c '^op=copy .* bytes=4194304 src=host dst=device ' "$tmp/ops")
  d2h=$(grep -c '^op=copy .* bytes=4194304 src=device dst=host ' "$tmp/ops")
  [ "$k $h2d $d2h" = "4 2 1" ] && pass "$what: 4 kernels, 2 copies in, 1 out" ||
    fail "$what: driver ran kernels/h2d/d2h $k/$h2d/$d2h, want 4/2/1"
done

if env -u ZE_ENABLE_ALT_DRIVERS GPUPROF_OUTPUT="$tmp/none" "$prog" >"$tmp/out" 2>"$tmp/err"; then
  fail "no driver: vadd exited 0"
else
  rc=$?
  [ "$rc" = 2 ] && grep -q 'zeInit: 0x78000001 (no Level Zero GPU driver)' "$tmp/err" &&
    pass "no driver: exit 2 and a clear message" || fail "no driver: rc $rc: $(cat "$tmp/err")"
fi
[ "$fails" = 0 ]
