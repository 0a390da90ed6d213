#!/usr/bin/env bash
# The projection checked against real runs (issue 23 item 4; doc/ANALYSIS.md
# "Projection against real runs"). Each case of tests/sim/proj_prog.c (the
# realtime simulated GPU) and tests/run/proj_cl.c (OpenCL: PoCL's CPU
# device, measured with `gpuprof run`) runs its kernel "work" with W units
# of work, traced (PROJ_TRACED runs, default 3), and `gpuprof project
# --speedup kernel:work=2` projects each; real runs at W and W/2 alternate
# (PROJ_ROUNDS pairs, default 5). The real change is median(W/2) /
# median(W) - 1 of the programs' own elapsed times; the projected change
# is the median over the traced runs of (projected - measured run) /
# that run's own elapsed time (the trace's run also holds the program's
# start, which the speedup does not touch). The error is |projected -
# real| in points, and as % of the real change:
#   BENCH projection_error_pct_<backend>_<case> E %
#   BENCH projection_error_points_<backend>_<case> P points
#   BENCH projection_real_change_pct_<backend>_<case> R %
#   BENCH projection_change_pct_<backend>_<case> C %
# (with PROJ_DEVICES=MODEL: <backend>_MODEL_<case>)
# and a line "CASE backend case real R projected C points P saved_ms S
# shared 0|1" per case for tests/scripts/projection.sh.
# PROJ_BACKENDS ("sim pocl"), PROJ_CASES ("a b c d"), PROJ_W (4 units),
# PROJ_DEVICES (gpuprof project --devices: auto when unset),
# PROJ_MS (the unit: 2 ms), PROJ_ITERS (8), PROJ_CL_UNIT (kernel loop
# iterations per unit on PoCL: 6000, about 2 ms here). A backend or case
# that cannot run here prints "# ... skipped: why". OpenMP's waiting
# threads sleep at once (KMP_BLOCKTIME=0): spinning ones would take the
# CPU cores PoCL's kernels run on.
set -u
B=${B:-build}
G=$B/bin/gpuprof
W=${PROJ_W:-4}
TRACED=${PROJ_TRACED:-3}
ROUNDS=${PROJ_ROUNDS:-5}
export PROJ_MS=${PROJ_MS:-2} PROJ_ITERS=${PROJ_ITERS:-8}
export PROJ_CL_UNIT=${PROJ_CL_UNIT:-6000} KMP_BLOCKTIME=0
export GPUPROF_CPU_SAMPLING=${GPUPROF_CPU_SAMPLING:-off}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export POCL_CACHE_DIR=$tmp/pocl
half=$(awk -v w="$W" 'BEGIN { print w / 2 }')
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ns() { awk -v v="$1" -v u="$2" 'BEGIN { m = u == "ms" ? 1e6 : u == "us" ? 1e3 : u == "s" ? 1e9 : 1; printf "%.0f", v * m }'; }
# real BACKEND CASE W: the program's elapsed ns, unmeasured for OpenCL
real() {
  case $1 in
  sim) GPUPROF_OUTPUT=$tmp/real "$B/tests/proj_prog" "$2" "$3" ;;
  pocl) "$B/tests/proj_cl" "$2" "$3" ;;
  esac 2>>"$tmp/err" | sed -n 's/^elapsed_ns //p'
  rm -rf "${tmp:?}/real"
}
# traced BACKEND CASE DIR: a traced run at W into DIR; prints elapsed ns
traced() {
  case $1 in
  sim) GPUPROF_OUTPUT=$3 GPUPROF_TRACE=1 "$B/tests/proj_prog" "$2" "$W" ;;
  pocl) "$G" run --trace --backends opencl -o "$3" -- "$B/tests/proj_cl" "$2" "$W" ;;
  esac 2>>"$tmp/err" | sed -n 's/^elapsed_ns //p'
}
# change DB ELAPSED: the projected change in % of the run's own time and
# the time saved (ms); the device model's line to $tmp/model
change() {
  "$G" project --speedup kernel:work=2 ${PROJ_DEVICES:+--devices "$PROJ_DEVICES"} "$1" \
    2>>"$tmp/err" >"$tmp/proj" || return 1
  sed -n 's/^devices, process 0: //p' "$tmp/proj" >"$tmp/model"
  sed -n 's/^projection, process 0: run \([0-9.]*\) \([mun]*s\) -> \([0-9.]*\) \([mun]*s\) .*/\1 \2 \3 \4/p' "$tmp/proj" |
    { read -r a au p pu || exit 1
      awk -v m="$(ns "$a" "$au")" -v p="$(ns "$p" "$pu")" -v e="$2" \
        'BEGIN { printf "%.2f %.3f\n", 100 * (p - m) / e, (m - p) / 1e6 }'; }
}
available() { # BACKEND: empty when it can run, else why not
  case $1 in
  sim) [ -x "$B/tests/proj_prog" ] || echo "no $B/tests/proj_prog" ;;
  pocl)
    if [ ! -x "$B/tests/proj_cl" ]; then echo "no $B/tests/proj_cl (built without OpenCL)"
    elif ! "$B/tests/proj_cl" a 0.1 >/dev/null 2>&1; then echo "no OpenCL platform runs proj_cl"
    fi ;;
  esac
}
[ -x "$G" ] || { echo "# projection.sh: no $G, skipped"; exit 0; }
for be in ${PROJ_BACKENDS:-sim pocl}; do
  why=$(available "$be")
  if [ -n "$why" ]; then
    echo "# projection.sh $be: skipped: $why"
    continue
  fi
  for c in ${PROJ_CASES:-a b c d}; do
    : >"$tmp/err"
    pcs=() saved=()
    for i in $(seq "$TRACED"); do
      rm -rf "${tmp:?}/t" "$tmp/t-db"
      e=$(traced "$be" "$c" "$tmp/t")
      [ -n "$e" ] && "$G" analyze -o "$tmp/t-db" "$tmp/t" >/dev/null 2>>"$tmp/err" &&
        read -r p sv < <(change "$tmp/t-db" "$e") && [ -n "$p" ] || { pcs=(); break; }
      pcs+=("$p") saved+=("$sv")
    done
    ws=() hs=()
    for i in $(seq "$ROUNDS"); do
      [ ${#pcs[@]} -gt 0 ] || break
      w=$(real "$be" "$c" "$W") h=$(real "$be" "$c" "$half")
      [ -n "$w" ] && [ -n "$h" ] || { ws=(); break; }
      ws+=("$w") hs+=("$h")
    done
    if [ ${#pcs[@]} -eq 0 ] || [ ${#ws[@]} -eq 0 ]; then
      echo "# projection.sh $be $c: skipped: a run failed: $(head -c 300 "$tmp/err" | tr '\n' ' ')"
      continue
    fi
    pc=$(median "${pcs[@]}") mw=$(median "${ws[@]}") mh=$(median "${hs[@]}")
    read -r rc pts rel < <(awk -v w="$mw" -v h="$mh" -v p="$pc" 'BEGIN {
      r = 100 * (h - w) / w; d = p - r; if (d < 0) d = -d
      printf "%.2f %.2f %.1f\n", r, d, 100 * d / (r < 0 ? -r : r) }')
    sv=$(median "${saved[@]}")
    echo "# $be $c: W=$W: $(awk -v x="$mw" 'BEGIN{printf "%.1f", x/1e6}') ms, W/2: $(awk -v x="$mh" 'BEGIN{printf "%.1f", x/1e6}') ms (real $rc %); projected $pc % (runs: ${pcs[*]}; $sv ms saved): error $pts points, $rel % of the change; device: $(cat "$tmp/model")"
    echo "CASE $be $c real $rc projected $pc points $pts saved_ms $sv shared $(grep -c "at once share it" "$tmp/model")"
    k="${be}${PROJ_DEVICES:+_$PROJ_DEVICES}_$c"
    printf 'BENCH projection_error_pct_%s %s %%\n' "$k" "$rel"
    printf 'BENCH projection_error_points_%s %s points\n' "$k" "$pts"
    printf 'BENCH projection_real_change_pct_%s %s %%\n' "$k" "$rc"
    printf 'BENCH projection_change_pct_%s %s %%\n' "$k" "$pc"
  done
done
