#!/usr/bin/env bash
# Program structure from DWARF, end to end: tests/sim/structure_prog (built
# with -g -O2) launches 5 kernels of 1000 ns from mid(), inlined into
# outer(); the database must show outer at the line where it calls mid,
# the inlined mid beneath it at the line of the launch, the launches beneath
# that, and every level holding the 5.000 us; the flat view must list mid
# as a procedure; --no-structure keeps frames by address.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
G=$B/bin/gpuprof
if [ ! -x "$B/tests/structure_prog" ] || [ ! -x "$G" ]; then
  fail "$B/tests/structure_prog and $G are built (run make tests first)"
  exit 1
fi
if GPUPROF_OUTPUT=$tmp/out "$B/tests/structure_prog" >"$tmp/lines" 2>"$tmp/err"; then
  pass "structure_prog runs"
else
  fail "structure_prog runs: $(cat "$tmp/err")"; exit 1
fi
outer_call=$(sed -n 's/^outer_call //p' "$tmp/lines")
mid_call=$(sed -n 's/^mid_call //p' "$tmp/lines")
launch=$(sed -n 's/^launch //p' "$tmp/lines")
"$G" analyze -o "$tmp/db" "$tmp/out" >/dev/null 2>"$tmp/err" &&
  pass "analyze" || { fail "analyze: $(cat "$tmp/err")"; exit 1; }
"$G" report --threshold 0 --metric gpu.time "$tmp/db" >"$tmp/td" 2>&1 ||
  fail "report: $(cat "$tmp/td")"

# follows FIRST NEXT...: FIRST's line is followed by NEXT... in order, each
# one level deeper, every one holding 5.000 us inclusive.
follows() {
  awk -v want="$*" '
    BEGIN { n = split(want, w, "|") }
    function name(l) { sub(/^ *[0-9.]+ [a-z]+ +[0-9.]+% +[0-9.]+ [a-z]+  /, "", l); return l }
    {
      line[NR] = $0
    }
    END {
      for (i = 1; i <= NR; i++) {
        s = name(line[i]); sub(/^ */, "", s)
        if (s != w[1]) continue
        ok = 1
        for (k = 2; k <= n && ok; k++) {
          t = name(line[i + k - 1]); d = length(t); sub(/^ */, "", t); d -= length(t)
          t0 = name(line[i + k - 2]); d0 = length(t0); sub(/^ */, "", t0); d0 -= length(t0)
          if (t != w[k] || d != d0 + 2) ok = 0
        }
        for (k = 1; k <= n && ok; k++)
          if (line[i + k - 1] !~ /^ *5\.000 us 100\.00%/) ok = 0
        if (ok) exit 0
      }
      exit 1
    }' "$tmp/td"
}
follows "outer (structure_prog)|structure_prog.c:$mid_call|[inlined] mid (structure_prog)|structure_prog.c:$launch|<kernel launch>|kernel inlined_work" &&
  pass "outer -> line $mid_call -> inlined mid -> line $launch -> the launches, 5.000 us at each" ||
  { fail "outer -> line $mid_call -> inlined mid -> line $launch -> the launches"; cat "$tmp/td"; }
follows "main (structure_prog)|structure_prog.c:$outer_call|outer (structure_prog)" &&
  pass "main -> line $outer_call -> outer" ||
  { fail "main -> line $outer_call -> outer"; cat "$tmp/td"; }

"$G" report --view flat --threshold 0 --metric gpu.time "$tmp/db" >"$tmp/flat" 2>&1
for f in "mid (structure_prog)" "outer (structure_prog)" "main (structure_prog)"; do
  grep -F -- "  $f" "$tmp/flat" | grep -q '^ *5\.000 us 100\.00%' &&
    pass "flat view: $f holds 5.000 us" || { fail "flat view: $f holds 5.000 us"; cat "$tmp/flat"; }
done
grep -q "structure_prog.c:" "$tmp/flat" &&
  fail "flat view: source lines are not procedures" || pass "flat view: source lines are not procedures"

"$G" analyze --no-structure -o "$tmp/db2" "$tmp/out" >/dev/null 2>&1
"$G" report --threshold 0 --metric gpu.time "$tmp/db2" >"$tmp/td2" 2>&1
! grep -q "\[inlined\]\|structure_prog\.c:" "$tmp/td2" && grep -q "outer+0x[0-9a-f]* (structure_prog)" "$tmp/td2" &&
  pass "--no-structure: frames by address" || { fail "--no-structure: frames by address"; cat "$tmp/td2"; }

[ "$fails" -eq 0 ]
