#!/usr/bin/env bash
# Replays every fuzz corpus through its target, under ASan+UBSan when that
# build exists (make check builds it), else the plain build.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
# intercept_tls_get_addr=0: see tests/run-tests.sh (a GCC 12 LeakSanitizer bug).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for src in tests/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  corpus=tests/fuzz/corpus/${name#fuzz_}
  bin=build/asan/tests/${name}_replay
  [ -x "$bin" ] || bin=$B/tests/${name}_replay
  if out=$("$bin" "$corpus" 2>&1); then
    echo "PASS $name: $out ($(basename "$(dirname "$(dirname "$bin")")"))"
  else
    echo "FAIL $name replay"; echo "$out" | tail -n 20; fails=$((fails + 1))
  fi
done
[ "$fails" -eq 0 ]
