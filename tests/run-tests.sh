#!/usr/bin/env bash
# tests/run-tests.sh - run test programs and scripts; one closing line.
#
#   tests/run-tests.sh BIN...   run these Check programs
#   tests/run-tests.sh --all    every built suite: $B/tests/{check,bb,bbxx}_*,
#                               then the ASan+UBSan (build/asan) and TSan
#                               (build/tsan) builds if present, then
#                               tests/scripts/*.sh
# Each Check program runs in a fresh temporary directory (TMPDIR and
# GPUPROF_OUTPUT point there); its output goes to $B/test-logs/. A program
# counts its checks from Check's summary line(s); one that exits non-zero or
# prints no summary counts as one more failure. A script counts its "PASS "
# and "FAIL " lines; a non-zero exit without a FAIL line is one failure.
# Every program and script runs with TMPDIR in a directory of this run's
# own, which must be empty again after each: one that leaves something
# there counts one more failure, naming what it left (and it is removed).
# GPUPROF_CHECK_REPEAT=N (--all only; .ci/run sets 2) runs the plain
# suites N times in all, the later rounds labelled "again2:", "again3:"...:
# a test that fails in any round fails the run, so a flaky one shows.
# The last line is "check: P passed, F failed"; the exit status is 1 if
# F > 0 or if nothing ran.
set -u
here=$(pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
B=${B:-build}
export B
logs="$B/test-logs"
mkdir -p "$logs"
passed=0
failed=0
# Check's per-test timeout; generous under the sanitizers. An explicit
# CK_DEFAULT_TIMEOUT wins for both.
timeout_plain=${CK_DEFAULT_TIMEOUT:-60}
timeout_san=${CK_DEFAULT_TIMEOUT:-120}
summary_re='^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+'
# CPU sampling (GPUPROF_CPU_SAMPLING, on by default in the library) adds
# sampled contexts, and the thread of gpuprof_init, to what the suites
# count exactly; they run with it off unless the caller sets it.
# tests/scripts/cpu-samples.sh and check_sampler turn it on themselves.
: "${GPUPROF_CPU_SAMPLING:=off}"
export GPUPROF_CPU_SAMPLING
run_tmp=$(mktemp -d)
trap 'rm -rf "$run_tmp"' EXIT
export TMPDIR=$run_tmp

left_behind() { # label: what it left in $run_tmp fails it
  local left
  left=$(ls -A "$run_tmp")
  [ -n "$left" ] || return 0
  echo "FAIL $1 left behind in TMPDIR: $(echo $left)"
  failed=$((failed + 1))
  rm -rf "${run_tmp:?}"/* "$run_tmp"/.[!.]* 2>/dev/null
}

abspath() { # path relative to the caller's directory
  case $1 in /*) echo "$1" ;; *) echo "$here/$1" ;; esac
}

run_check() { # label binary kind(plain|asan|tsan)
  local label=$1 bin=$2 kind=$3 tmp log rc n=0 f=0 e=0 line
  tmp=$(mktemp -d)
  log="$logs/${label//[:\/]/_}.log"
  (
    export TMPDIR=$tmp GPUPROF_OUTPUT=$tmp/out
    # Check forks every test: a sanitizer report in the child fails it.
    # intercept_tls_get_addr=0: GCC 12's LeakSanitizer guesses the bounds
    # of a dlopened library's thread-local block (libcupti's, here) from a
    # "glibc 2.19 header" whenever its address is 16 mod 4096, reads
    # garbage bounds there and dies at exit ("Tracer caught signal 11") --
    # for about one heap layout in 64. Without the interception those
    # blocks are ordinary heap chunks, still scanned through glibc's dtv.
    # tests/lsan.supp: what glibc keeps (its dlopen's dependency lists).
    case $kind in
      asan) export CK_DEFAULT_TIMEOUT=$timeout_san \
              ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0" \
              LSAN_OPTIONS="suppressions=$root/tests/lsan.supp" \
              UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" ;;
      tsan) export CK_DEFAULT_TIMEOUT=$timeout_san \
              TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ;;
      *) export CK_DEFAULT_TIMEOUT=$timeout_plain ;;
    esac
    cd "$tmp" && exec "$bin"
  ) </dev/null >"$log" 2>&1
  rc=$?
  rm -rf "$tmp"
  left_behind "$label"
  # A program may run several runners: add up every summary line.
  while read -r line; do
    [ -n "$line" ] || continue
    n=$((n + $(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$line")))
    f=$((f + $(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$line")))
    e=$((e + $(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$line")))
  done < <(grep -E "$summary_re" "$log")
  if [ "$n" -eq 0 ] && ! grep -qE "$summary_re" "$log"; then
    echo "FAIL $label (exit $rc, no Check summary; log $log)"
    tail -n 20 "$log" | sed 's/^/    /'
    failed=$((failed + 1))
    return
  fi
  passed=$((passed + n - f - e))
  failed=$((failed + f + e))
  if [ "$f" -ne 0 ] || [ "$e" -ne 0 ] || [ "$rc" -ne 0 ]; then
    [ "$f" -eq 0 ] && [ "$e" -eq 0 ] && failed=$((failed + 1))
    echo "FAIL $label ($n checks, $f failures, $e errors, exit $rc; log $log)"
    { grep -E ':[FE]:' "$log" | head -n 20; tail -n 10 "$log"; } | sed 's/^/    /'
  else
    printf 'ok   %-28s (%d checks)\n' "$label" "$n"
  fi
}

run_script() { # script
  local s=$1 name log rc p f
  name=$(basename "$s")
  log="$logs/$name.log"
  bash "$s" </dev/null >"$log" 2>&1
  rc=$?
  left_behind "$name"
  p=$(grep -c '^PASS ' "$log")
  f=$(grep -c '^FAIL ' "$log")
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    failed=$((failed + 1))
    f=1
  fi
  if [ "$f" -ne 0 ]; then
    echo "FAIL $name ($p passed, $f failed, exit $rc; log $log)"
    { grep -E '^FAIL ' "$log"; tail -n 10 "$log"; } | sed 's/^/    /'
  elif [ "$p" -eq 0 ]; then
    echo "skip $name ($(grep -m 1 '^SKIP ' "$log" || echo 'no checks'))"
  else
    printf 'ok   %-28s (%d checks)\n' "$name" "$p"
  fi
}

suites() { # build dir
  local d=$1 b
  for b in "$d"/tests/check_* "$d"/tests/bb_* "$d"/tests/bbxx_*; do
    [ -f "$b" ] && [ -x "$b" ] && echo "$b"
  done
}

kind_of() { # binary path: which sanitizer build it comes from
  case $1 in
    */asan/tests/*) echo asan ;;
    */tsan/tests/*) echo tsan ;;
    *) echo plain ;;
  esac
}
if [ "${1:-}" = "--all" ]; then
  for b in $(suites "$B"); do
    run_check "$(basename "$b")" "$root/$b" "$(kind_of "$root/$b")"
  done
  for k in asan tsan; do
    [ "$B" = "build/$k" ] && continue # already run above
    for b in $(suites "build/$k"); do
      run_check "$k:$(basename "$b")" "$root/$b" "$k"
    done
  done
  for s in tests/scripts/*.sh; do
    [ -f "$s" ] && run_script "$s"
  done
  repeat=${GPUPROF_CHECK_REPEAT:-1}
  case $repeat in
    '' | *[!0-9]*)
      echo "FAIL GPUPROF_CHECK_REPEAT=$repeat is not a number of rounds"
      failed=$((failed + 1))
      repeat=1 ;;
  esac
  round=2
  while [ "$round" -le "$repeat" ]; do
    for b in $(suites "$B"); do
      [ "$(kind_of "$root/$b")" = plain ] || continue
      run_check "again$round:$(basename "$b")" "$root/$b" plain
    done
    round=$((round + 1))
  done
else
  for b in "$@"; do
    bin=$(abspath "$b")
    if [ ! -x "$bin" ]; then
      echo "FAIL $b (not built)"
      failed=$((failed + 1))
      continue
    fi
    run_check "$(basename "$b")" "$bin" "$(kind_of "$bin")"
  done
fi

if [ $((passed + failed)) -eq 0 ]; then
  echo "run-tests.sh: nothing ran" >&2
  failed=1
fi
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
