#!/usr/bin/env bash
# tests/run-tests.sh - run test programs and scripts; one closing line.
#
#   tests/run-tests.sh BIN...   run these Check programs
#   tests/run-tests.sh --all    every built suite: $B/tests/*, then the
#                               ASan+UBSan and TSan builds if present, then
#                               tests/scripts/*.sh
# Each Check program runs in a fresh temporary directory (TMPDIR and
# GPUPROF_OUTPUT point there); its output goes to $B/test-logs/. The last
# line is "check: P passed, F failed"; the exit status is 1 if F > 0 or if
# nothing ran.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
B=${B:-build}
export B
logs="$B/test-logs"
mkdir -p "$logs"
passed=0
failed=0

run_check() { # label binary
  local label=$1 bin=$2 tmp log line n f e
  tmp=$(mktemp -d)
  log="$logs/${label//[:\/]/_}.log"
  ( export TMPDIR=$tmp GPUPROF_OUTPUT=$tmp/out CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-120}
    cd "$tmp" && "$root/$bin" ) >"$log" 2>&1
  local rc=$?
  rm -rf "$tmp"
  line=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    echo "FAIL $label (exit $rc, no Check summary)"; tail -n 20 "$log"
    failed=$((failed + 1)); return
  fi
  n=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$line")
  f=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$line")
  e=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$line")
  passed=$((passed + n - f - e))
  failed=$((failed + f + e))
  if [ "$f" -ne 0 ] || [ "$e" -ne 0 ] || [ "$rc" -ne 0 ]; then
    [ "$f" -eq 0 ] && [ "$e" -eq 0 ] && failed=$((failed + 1))
    echo "FAIL $label ($line)"; grep -E ':[FE]:' "$log" | head -n 20
  else
    echo "ok   $label ($n checks)"
  fi
}

run_script() { # script
  local s=$1 log p f
  log="$logs/$(basename "$s").log"
  bash "$s" >"$log" 2>&1
  local rc=$?
  p=$(grep -c '^PASS ' "$log")
  f=$(grep -c '^FAIL ' "$log")
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    failed=$((failed + 1)); f=1
  fi
  if [ "$f" -ne 0 ]; then
    echo "FAIL $(basename "$s") ($p passed, $f failed)"; grep -E '^FAIL ' "$log"; tail -n 5 "$log"
  else
    echo "ok   $(basename "$s") ($p checks)"
  fi
}

suites() { # build dir
  local d=$1 b
  for b in "$d"/tests/check_* "$d"/tests/bb_* "$d"/tests/bbxx_*; do
    [ -x "$b" ] && echo "$b"
  done
}

if [ "${1:-}" = "--all" ]; then
  for b in $(suites "$B"); do run_check "$(basename "$b")" "$b"; done
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  for b in $(suites build/asan); do run_check "asan:$(basename "$b")" "$b"; done
  unset ASAN_OPTIONS UBSAN_OPTIONS
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
  for b in $(suites build/tsan); do run_check "tsan:$(basename "$b")" "$b"; done
  unset TSAN_OPTIONS
  for s in tests/scripts/*.sh; do [ -f "$s" ] && run_script "$s"; done
else
  for b in "$@"; do run_check "$(basename "$b")" "$b"; done
fi

if [ $((passed + failed)) -eq 0 ]; then
  echo "check: 0 passed, 1 failed"
  echo "run-tests.sh: nothing ran" >&2
  exit 1
fi
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
