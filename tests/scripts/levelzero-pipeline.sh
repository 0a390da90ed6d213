#!/usr/bin/env bash
# A Level Zero program as a new user writes one (tests/run/ze_pipeline.c:
# immediate lists on two compute engines and the copy engine chained by
# events, a host-signalled gate, host waits, then a regular list run 25
# times before one synchronize) under `gpuprof run` on the fake driver,
# read back with `gpuprof report` and compared with what the driver did
# (FAKEZE_TRACE): every kernel and copy counted, device times and bytes
# as the driver ran them (to the report's precision), the copies on the
# copy engine, the host waits, nothing dropped. SKIP where the backend or
# the program was not built (no Level Zero headers: libze-dev).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
. tests/support/fakeze.sh
ze_need_backend levelzero-pipeline.sh "install libze-dev"
prog=$B/tests/run_ze_pipeline
ze_need levelzero-pipeline.sh "$prog" "$B/bin/gpuprof"

if ZE_ENABLE_ALT_DRIVERS="$drv" FAKEZE_TRACE="$tmp/ops" \
    FAKEZE_KERNELS=produce=1000000,consume=2000000,step=500000 \
    "$B/bin/gpuprof" run -o "$tmp/m" --backends levelzero -- "$prog" \
    >"$tmp/out" 2>"$tmp/err"; then
  pass "ze_pipeline under gpuprof run exits 0"
else
  fail "ze_pipeline under gpuprof run: $(cat "$tmp/err")"
fi
"$B/bin/gpuprof" report "$tmp/m" >"$tmp/report" 2>&1 ||
  fail "gpuprof report: $(tail -3 "$tmp/report")"

# The driver's account: count, device ns (80 ns ticks at the default
# 12.5 MHz) formatted as the report does, bytes; of the ops matching $1.
truth() {
  awk -v want="$1" '
    { for (i = 1; i <= NF; i++) { split($i, f, "="); v[f[1]] = f[2] }
      key = v["op"] " " v["name"] " " v["src"] " " v["dst"] }
    key == want { n++; ns += (v["end"] - v["start"]) * 80; b += v["bytes"] }
    END {
      if (ns < 1000) t = sprintf("%d ns", ns)
      else if (ns < 1000000) t = sprintf("%.3f us", ns / 1e3)
      else if (ns < 1000000000) t = sprintf("%.3f ms", ns / 1e6)
      else t = sprintf("%.3f s", ns / 1e9)
      printf "%d %s %d\n", n, t, b
    }' "$tmp/ops"
}
# The report's row of context $1 (its innermost frame column): count,
# time, bytes (0 when the column is empty).
row() {
  awk -v c="$1" '{ t = $0; sub(/^.*  /, "", t) }
    t == c { b = ($4 ~ /^[0-9]+$/) ? $4 : 0; print $1, $2, $3, b; exit }' \
    "$tmp/report"
}
check() { # $1 report context, $2 driver key, $3 expected count
  local want got
  want=$(truth "$2")
  got=$(row "$1")
  if [ "$got" = "$want" ] && [ "${want%% *}" = "$3" ]; then
    pass "$1: $got (count, device time, bytes as the driver ran them)"
  else
    fail "$1: report '$got', driver '$want', expected count $3"
  fi
}
check "kernel produce" "kernel produce - -" 10
check "kernel consume" "kernel consume - -" 10
check "kernel step" "kernel step - -" 50
check "<copy h2d>" "copy - host device" 10
check "<copy d2h>" "copy - device system" 10

engines=$(awk '$1 == "op=copy" { print $3 }' "$tmp/ops" | sort -u)
[ "$engines" = "engine=1.0" ] && pass "the copies ran on the copy engine" ||
  fail "copies on: $engines"
kengines=$(awk '$1 == "op=kernel" { print $3 }' "$tmp/ops" | sort -u | tr '\n' ' ')
[ "$kengines" = "engine=0.0 engine=0.1 " ] &&
  pass "kernels on compute engines 0.0 and 0.1" || fail "kernels on: $kengines"
syncs=$(awk '{ t = $0; sub(/^.*  /, "", t) } t == "<sync>" { s += $1 } END { print s + 0 }' "$tmp/report")
[ "$syncs" = 11 ] && pass "11 host waits (10 events, 1 queue)" ||
  fail "host waits: $syncs"
total=$(sed -n 's/^GPU operations by calling context: \([0-9]*\) operations.*/\1/p' "$tmp/report")
[ "$total" = 103 ] && pass "103 operations (90 device, 11 waits, a context and a build)" ||
  fail "operations: $total"
"$B/bin/gpuprof" dump "$tmp"/m/*.gpuprof >"$tmp/dump" 2>&1
if grep '^counters' "$tmp/dump" | grep -q 'records.dropped=[1-9]'; then
  fail "records dropped: $(grep '^counters' "$tmp/dump")"
else
  pass "nothing in records.dropped"
fi
[ "$fails" = 0 ]
