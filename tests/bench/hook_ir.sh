#!/usr/bin/env bash
# hook_ir.sh - `make bench-ir`: the GPU API hook in instructions per call
# (callgrind), what a shared, noisy machine cannot blur. Runs
# $B/bench/hook_ir (tests/bench/hook_ir.c) under valgrind --tool=callgrind,
# collecting only inside its seg_* functions (on the calling thread), and
# prints one line per figure:
#   IR <name> <instructions per call> Ir
#   backtrace      libunwind's unw_backtrace, 30 frames deep (the baseline)
#   check          the loader check a capture makes first
#   unwind         the check and the unwind (gpuprof__unwind_here)
#   path           the path through the thread's last-path cache, unchanged
#   hook_repeat    a sim launch's gpuprof__op_begin and _end, one call site
#                  (everything the hook does: bench_sim's _repeat)
#   hook_mixed     the same, two call sites in turn (hook_ns_30_frames)
#   hook_repeat_beyond_unwind   hook_repeat less unwind
# SKIP when valgrind is not installed. Not part of `make bench` (callgrind
# takes a while).
set -eu
B=${B:-build}
prog=$B/bench/hook_ir
if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
  echo "SKIP bench-ir: valgrind (callgrind) is not installed"
  exit 0
fi
K=2000 # calls per segment: hook_ir.c's K
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# grind SEGMENT...: one callgrind run collecting in these seg_* functions;
# the inclusive counts, one "function count" line each.
grind() {
  local args=() s
  for s in "$@"; do args+=("--toggle-collect=seg_$s"); done
  valgrind --tool=callgrind --collect-atstart=no "${args[@]}" \
    --callgrind-out-file="$out" "$prog" >/dev/null 2>&1 ||
    { echo "bench-ir: $prog failed under callgrind" >&2; exit 1; }
  # Each function's largest inclusive count (its lines per source file of
  # inlined code are parts of it).
  callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null |
    awk '/^ *[0-9,]+ \(/ && !/=>/ { v = $1; gsub(",", "", v)
           f = $0; sub(/^[^)]*\) */, "", f); sub(/ .*$/, "", f)
           sub(/^.*:/, "", f); if (v + 0 > best[f]) best[f] = v + 0 }
         END { for (f in best) print f, best[f] }'
}
per_call() { # counts function
  awk -v f="$2" -v k=$K '$1 == f { printf "%.0f", $2 / k; found = 1 }
    END { if (!found) exit 1 }' <<<"$1" ||
    { echo "bench-ir: no count for $2" >&2; exit 1; }
}
c=$(grind backtrace check unwind path)
for s in backtrace check unwind path; do
  eval "ir_$s=$(per_call "$c" "seg_$s")"
  eval "echo IR $s \$ir_$s Ir"
done
for s in repeat mixed; do
  c=$(grind "launch_$s")
  b=$(per_call "$c" gpuprof__op_begin)
  e=$(per_call "$c" gpuprof__op_end)
  echo "IR hook_$s $((b + e)) Ir"
  [ "$s" = repeat ] && beyond=$((b + e - ir_unwind))
done
echo "IR hook_repeat_beyond_unwind $beyond Ir"
