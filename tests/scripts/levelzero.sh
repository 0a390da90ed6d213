#!/usr/bin/env bash
# The Level Zero backend as a new user meets it: examples/levelzero/vadd
# (a plain Level Zero program) under `gpuprof run` on the fake driver
# (tests/fakeze, through the real loader and its tracing layer), read back
# with `gpuprof report`: exact kernel, copy and barrier counts, device time
# and bytes, the JIT detector; with no driver, the backend says why in one
# line and the program behaves as without gpuprof. SKIP where the backend
# was not built (no Level Zero headers: libze-dev) or the example's SPIR-V
# could not be (no clang-15/llvm-spirv-15).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
. tests/support/fakeze.sh
ze_need_backend levelzero.sh "no <level_zero/ze_api.h> and layers/zel_tracing_api.h: install libze-dev"
prog=$B/examples/levelzero/vadd
ze_need levelzero.sh "$prog" "$prog.spv" "$B/bin/gpuprof"

# 4 launches of 1.5 ms, two 4 MiB copies in, one out, 5 barriers.
if ZE_ENABLE_ALT_DRIVERS="$drv" FAKEZE_KERNELS=vadd=1500000 \
    "$B/bin/gpuprof" run -o "$tmp/m" --backends levelzero -- \
    "$prog" "$prog.spv" >"$tmp/out" 2>"$tmp/err"; then
  pass "vadd under gpuprof run exits 0"
else
  fail "vadd under gpuprof run: $(cat "$tmp/err")"
fi
"$B/bin/gpuprof" report "$tmp/m" >"$tmp/report" 2>&1 || fail "gpuprof report: $(tail -3 "$tmp/report")"
row() { # the first report row whose context is $1: "count time unit [bytes]"
  awk -v c="$1" '{ t = $0; sub(/^.*  /, "", t) } t == c { print; exit }' "$tmp/report"
}
k=$(row "kernel vadd")
[ "$(echo "$k" | awk '{print $1, $2, $3}')" = "4 6.000 ms" ] &&
  pass "4 kernels vadd, 6.000 ms of device time" || fail "kernel row: $k"
h=$(row "<copy h2d>")
[ "$(echo "$h" | awk '{print $1, $4}')" = "2 8388608" ] &&
  pass "2 copies in, 8388608 bytes" || fail "h2d row: $h"
d=$(row "<copy d2h>")
[ "$(echo "$d" | awk '{print $1, $4}')" = "1 4194304" ] &&
  pass "1 copy out, 4194304 bytes" || fail "d2h row: $d"
o=$(row "<other>")
[ "$(echo "$o" | awk '{print $1}')" = "5" ] && pass "5 barriers" || fail "other row: $o"
grep -q '^  \[jit_single_device\]' "$tmp/report" &&
  pass "the SPIR-V module is a JIT build (detector)" || fail "no jit_single_device in the report"
ls "$tmp/m/binaries/"*.zebin >/dev/null 2>&1 &&
  pass "the module's binary saved as .zebin" || fail "no binaries/*.zebin"

# No driver: one line saying why; the program exits as it would alone.
env -u ZE_ENABLE_ALT_DRIVERS "$prog" "$prog.spv" >/dev/null 2>"$tmp/alone"
alone=$?
env -u ZE_ENABLE_ALT_DRIVERS "$B/bin/gpuprof" run -o "$tmp/n" --backends levelzero \
  --log warn -- "$prog" "$prog.spv" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" = "$alone" ] && pass "no driver: exit status $rc, as without gpuprof" ||
  fail "no driver: exit $rc, alone $alone"
grep -q 'backend levelzero unavailable: no Level Zero driver' "$tmp/err" &&
  pass "no driver: said in one line" || fail "no driver: $(cat "$tmp/err")"
[ "$fails" = 0 ]
