#!/usr/bin/env bash
# tests/scripts/cupti-gpu.sh - the CUPTI backend on a real NVIDIA GPU (a
# tagged GPU test). Without a GPU it prints one SKIP line and exits 0, so
# `make check` passes anywhere; `make check-gpu` runs it on its own.
#
# Each CUDA example (examples/cuda/*.cu, built when nvcc is found) runs
# with GPUPROF_BACKENDS=cupti and GPUPROF_TRACE=1 and prints what it did
# (the lines are described at the top of each example). Then the
# measurements go through `gpuprof analyze`, `gpuprof report` (the
# measurement directory and the database's flat view) and `gpuprof export
# --table`, and the table must agree with the example:
#   BACKEND cupti active        else the backend's reason is shown
#   KERNEL <k> launches <n>     gpu.count summed over k's kernel nodes = n
#   EVENT_MS <k> <ms>           gpu.time summed likewise within 10 % (at
#                               least 50 us) of the CUDA events' time
#   WHERE <k> region <r> function <f>
#                               every node of k sits directly beneath a
#                               "<kernel launch>" placeholder, beneath the
#                               region r and a frame/function naming f
#   OPS <op> <n> [bytes <b>]    the placeholder's exclusive gpu.count (and
#                               gpu.bytes) over the whole profile
#   STREAM_OPS <s> <m>          the trace has s device streams, m records each
# and the profile holds no kernel the example did not launch.
#
# What the backend and the analysis call things is read in one place:
# profile_rows (the table -> one line per kernel or placeholder) and
# kernel_match (a kernel's full name against the short name an example
# prints: plain, demangled or Itanium-mangled). Adapt those two when names
# change.
#
# Then each example again under PC sampling, kernel-serialized and
# continuous (GPUPROF_CUPTI_PC_SAMPLING=1, _MODE): launch counts exact, and
# a kernel that ran for a millisecond or more without a PC sample fails.
# The event references (EVENT_MS) time the kernels only: the examples
# queue each timed batch behind a gate (examples/cuda/event_gate.h), so
# neither launch latency nor lazy module loading is in them.
#
# GPUPROF_GPU_REQUIRED=1 (make check-gpu): with a GPU present, a
# libgpuprof without the CUPTI backend or examples that were not built
# fail instead of skipping.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$B/bin/gpuprof
strict=${GPUPROF_GPU_REQUIRED:-0}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# Nothing can be checked here: SKIP (exit 0), or FAIL when required.
cannot() {
  if [ "$strict" = 1 ]; then fail "$*"; else echo "SKIP $*"; fi
  exit $((fails > 0))
}

# ---- is there a GPU? ------------------------------------------------------
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "SKIP no NVIDIA GPU (no nvidia-smi)"
  exit 0
fi
if ! smi=$(nvidia-smi -L 2>&1) || ! grep -q '^GPU [0-9]' <<<"$smi"; then
  echo "SKIP no NVIDIA GPU (nvidia-smi -L: $(head -n 1 <<<"$smi"))"
  exit 0
fi
echo "# $(head -n 1 <<<"$smi")"

examples=()
for src in examples/cuda/*.cu; do
  [ -f "$src" ] && examples+=("$(basename "$src" .cu)")
done
[ ${#examples[@]} -gt 0 ] || { fail "examples/cuda/*.cu exist"; exit 1; }
[ -x "$G" ] || { fail "$G is built (run make first)"; exit 1; }
if [ ! -x "$B/examples/cuda/${examples[0]}" ]; then
  nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
  if ! "$nvcc" --version >/dev/null 2>&1; then
    cannot "no nvcc ($nvcc): the CUDA examples are not built"
  fi
  fail "$B/examples/cuda/${examples[0]} is built (run make first)"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- reading the analysis: the only place that knows its names -----------
# profile_rows TABLE.csv: one tab-separated line per kernel or GPU operation
# placeholder context, its values summed over every profile (thread):
#   kind  name  gpu.count  gpu.time(ns)  gpu.bytes  ancestor...
# kind is "kernel" or "gpu op"; a kernel's name is as the backend gave it,
# without the table's "kernel " prefix and " [binary]" suffix; each ancestor
# is "kind:name", from the root down to the parent. Values are exclusive.
profile_rows() {
  awk '
    function csv(line, f,    n, i, c, s, q) { # split one CSV record
      if (index(line, "\"") == 0)
        return split(line, f, ",")
      n = 0; s = ""; q = 0
      for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q) {
          if (c != "\"") s = s c
          else if (substr(line, i + 1, 1) == "\"") { s = s c; i++ }
          else q = 0
        } else if (c == "\"") q = 1
        else if (c == ",") { f[++n] = s; s = "" }
        else s = s c
      }
      f[++n] = s
      return n
    }
    NR == 1 { n = csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
    {
      csv($0, f)
      c = f[col["context"]]
      par[c] = f[col["parent"]]; kind[c] = f[col["kind"]]; name[c] = f[col["name"]]
      cnt[c] += f[col["gpu.count"]]; tim[c] += f[col["gpu.time"]]
      if ("gpu.bytes" in col) byt[c] += f[col["gpu.bytes"]]
    }
    END {
      for (c in kind) {
        if (kind[c] != "kernel" && kind[c] != "gpu op") continue
        nm = name[c]
        if (kind[c] == "kernel") { sub(/^kernel /, "", nm); sub(/ \[[^]]*\]$/, "", nm) }
        path = ""
        for (p = par[c]; p != "" && (p in kind); p = par[p])
          path = "\t" kind[p] ":" name[p] path
        printf "%s\t%s\t%.0f\t%.0f\t%.0f%s\n", kind[c], nm, cnt[c], tim[c], byt[c], path
      }
    }' "$1"
}
# kernel_match(full, short), for awk: is `full` (a kernel's name in the
# profile) the kernel an example calls `short`? CUPTI gives mangled names
# (_Z10scale_biasPfiffi); demangled (void scale_bias(float *, ...)) and
# plain (extern "C") names are accepted too.
kernel_match='
  function kernel_match(full, short) {
    return full == short || index(full, short "(") == 1 ||
           index(full, short "<") == 1 || index(full, "void " short "(") == 1 ||
           index(full, "void " short "<") == 1 ||
           index(full, "_Z" length(short) short) == 1
  }'
# kernel_sum ROWS SHORT: "<launches> <ns> <nodes>" over the matching kernels.
kernel_sum() {
  awk -F '\t' -v k="$2" "$kernel_match"'
    $1 == "kernel" && kernel_match($2, k) { n += $3; t += $4; c++ }
    END { printf "%.0f %.0f %d\n", n, t, c }' "$1"
}
# op_sum ROWS PLACEHOLDER: "<count> <bytes>" of a placeholder ("<memset>").
op_sum() {
  awk -F '\t' -v p="$2" '$1 == "gpu op" && $2 == p { n += $3; b += $5 }
    END { printf "%.0f %.0f\n", n, b }' "$1"
}
# The placeholder of an OPS line's operation.
placeholder() {
  case $1 in
    copy_h2d) echo "<copy h2d>" ;;
    copy_d2h) echo "<copy d2h>" ;;
    copy_d2d) echo "<copy d2d>" ;;
    memset) echo "<memset>" ;;
    sync) echo "<sync>" ;;
    *) echo "<$1>" ;;
  esac
}

# ---- the checks -------------------------------------------------------------
check_kernels() { # example dir
  local ex=$1 d=$2 name n ms got ns nodes
  while read -r _ name _ n; do
    read -r got ns nodes < <(kernel_sum "$d/rows" "$name")
    if [ "$got" = "$n" ]; then
      pass "$ex: kernel $name: gpu.count $got = launches (in $nodes contexts)"
    else
      fail "$ex: kernel $name: gpu.count $got, the example launched $n"
    fi
  done < <(grep '^KERNEL ' "$d/out")
  while read -r _ name ms; do
    read -r got ns nodes < <(kernel_sum "$d/rows" "$name")
    if awk -v g="$ns" -v e="$ms" 'BEGIN { ev = e * 1e6; d = g - ev
          if (d < 0) d = -d; tol = ev * 0.10; if (tol < 50000) tol = 50000
          exit !(d <= tol) }'; then
      pass "$ex: kernel $name: gpu.time $ns ns ~ events $ms ms"
    else
      fail "$ex: kernel $name: gpu.time $ns ns, events $ms ms (tolerance 10 %, at least 50 us)"
    fi
  done < <(grep '^EVENT_MS ' "$d/out")
  # No kernel the example did not launch.
  local known others
  known=$(awk '/^KERNEL /{ printf "%s ", $2 }' "$d/out")
  others=$(awk -F '\t' -v known="$known" "$kernel_match"'
    BEGIN { n = split(known, k, " ") }
    $1 == "kernel" { for (i = 1; i <= n; i++) if (kernel_match($2, k[i])) next
                     printf "%s%s (%s)", sep, $2, $3; sep = ", " }' "$d/rows")
  if [ -z "$others" ]; then
    pass "$ex: no other kernels in the profile"
  else
    fail "$ex: kernels the example did not launch: $others"
  fi
}

check_where() { # example dir
  local ex=$1 d=$2 name region fn bad
  while read -r _ name _ region _ fn; do
    bad=$(awk -F '\t' -v k="$name" -v r="$region" -v f="$fn" "$kernel_match"'
      $1 == "kernel" && kernel_match($2, k) {
        ok_p = $NF == "gpu op:<kernel launch>"; ok_r = 0; ok_f = 0
        for (i = 6; i < NF; i++) {
          if ($i == "region:" r) ok_r = 1
          if ($i ~ /^(frame|function|inlined):/ && index($i, f)) ok_f = 1
        }
        if (!(ok_p && ok_r && ok_f)) {
          printf "%s:", $2; for (i = 6; i <= NF; i++) printf " > %s", $i; print ""
        }
      }' "$d/rows")
    if [ -z "$bad" ]; then
      pass "$ex: kernel $name beneath <kernel launch>, $fn and region $region"
    else
      fail "$ex: kernel $name beneath <kernel launch>, $fn and region $region; found:"
      sed 's/^/    /' <<<"$bad"
    fi
  done < <(grep '^WHERE ' "$d/out")
}

check_ops() { # example dir
  local ex=$1 d=$2 op n bytes ph got gotb
  while read -r _ op n _ bytes; do
    ph=$(placeholder "$op")
    read -r got gotb < <(op_sum "$d/rows" "$ph")
    if [ "$got" = "$n" ] && { [ -z "$bytes" ] || [ "$gotb" = "$bytes" ]; }; then
      pass "$ex: $ph: gpu.count $got${bytes:+, gpu.bytes $gotb}"
    else
      fail "$ex: $ph: gpu.count $got, gpu.bytes $gotb; the example made $n${bytes:+ of $bytes bytes}"
    fi
  done < <(grep '^OPS ' "$d/out")
}

check_streams() { # example dir profile
  local ex=$1 d=$2 prof=$3 want_s want_m trace lines full
  read -r _ want_s want_m < <(grep -m 1 '^STREAM_OPS ' "$d/out") || return 0
  trace=${prof%.gpuprof}.gptrace
  if ! "$G" dump "$trace" >"$d/trace" 2>&1; then
    fail "$ex: gpuprof dump reads the trace ($trace)"; head -n 5 "$d/trace"
    return
  fi
  lines=$(grep -cE '^gpu device [0-9]+ stream [0-9]+: [0-9]+ records' "$d/trace")
  full=$(grep -cE "^gpu device [0-9]+ stream [0-9]+: $want_m records" "$d/trace")
  if [ "$lines" = "$want_s" ] && [ "$full" = "$want_s" ]; then
    pass "$ex: trace: $want_s streams with $want_m records each"
  else
    fail "$ex: trace: $want_s streams with $want_m records each; found:"
    grep -E '^gpu device ' "$d/trace" | sed 's/^/    /'
  fi
}

run_example() { # name
  local ex=$1 d=$tmp/$1 be prof before=$fails
  mkdir -p "$d"
  if ! GPUPROF_BACKENDS=cupti GPUPROF_OUTPUT=$d/m GPUPROF_TRACE=1 \
       GPUPROF_LOG=warn "$B/examples/cuda/$ex" >"$d/out" 2>"$d/err"; then
    fail "$ex runs"; cat "$d/out" "$d/err"
    return
  fi
  be=$(grep -m 1 '^BACKEND cupti ' "$d/out")
  case $be in
    "BACKEND cupti active") pass "$ex runs, backend cupti active" ;;
    "BACKEND cupti absent")
      cannot "libgpuprof has no CUPTI backend (not in this tree, or built without CUDA's headers)" ;;
    "") fail "$ex prints a BACKEND line"; cat "$d/out" "$d/err"; return ;;
    *) fail "$ex: backend cupti active, not: ${be#BACKEND cupti }"
       cat "$d/err"; return ;;
  esac
  [ -s "$d/err" ] && sed 's/^/# stderr: /' "$d/err"
  prof=$(ls "$d"/m/*.gpuprof 2>/dev/null | head -n 1)
  if [ -n "$prof" ] && "$G" dump "$prof" >"$d/dump" 2>&1; then
    grep -m 1 '^counters' "$d/dump" | sed 's/^/# /'
    if grep -qE '(^| )records\.dropped=[1-9]' "$d/dump"; then
      fail "$ex: no records dropped"
    else
      pass "$ex: no records dropped"
    fi
  else
    fail "$ex: gpuprof dump reads its profile"; cat "$d/dump" 2>/dev/null
    return
  fi
  if "$G" report "$d/m" >"$d/report" 2>&1 && grep -q 'kernel ' "$d/report"; then
    pass "$ex: gpuprof report on the measurements shows kernels"
  else
    fail "$ex: gpuprof report on the measurements shows kernels"; cat "$d/report"
  fi
  if ! "$G" analyze -o "$d/db" "$d/m" >"$d/analyze" 2>&1; then
    fail "$ex: gpuprof analyze"; cat "$d/analyze"
    return
  fi
  if "$G" report --view flat --metric gpu.count --metric gpu.time \
       --threshold 0 "$d/db" >"$d/flat" 2>&1 && grep -q 'kernel ' "$d/flat"; then
    pass "$ex: gpuprof report --view flat on the database shows kernels"
  else
    fail "$ex: gpuprof report --view flat on the database shows kernels"
    cat "$d/flat"
  fi
  if ! "$G" export --table "$d/db" >"$d/table.csv" 2>"$d/export.err"; then
    fail "$ex: gpuprof export --table"; cat "$d/export.err"
    return
  fi
  profile_rows "$d/table.csv" >"$d/rows"
  check_kernels "$ex" "$d"
  check_where "$ex" "$d"
  check_ops "$ex" "$d"
  check_streams "$ex" "$d" "$prof"
  if grep -qE ': ok$' "$d/out"; then
    pass "$ex: its own result check"
  else
    fail "$ex: its own result check"; grep -vE '^[A-Z_]+ ' "$d/out"
  fi
  if [ "$fails" -ne "$before" ]; then
    echo "--- $ex: output"; cat "$d/out"
    echo "--- $ex: kernels and placeholders (kind, name, count, ns, bytes, path)"
    cat "$d/rows"
    echo "--- $ex: flat view"; cat "$d/flat"
  fi
}

# ---- PC sampling --------------------------------------------------------------
# pc_rows TABLE.csv: "<kernel>\t<gpu.pc.samples>" per kernel name, the
# samples of its instruction nodes (exclusive values) added to it.
pc_rows() {
  awk '
    function csv(line, f,    n, i, c, s, q) {
      n = 0; s = ""; q = 0
      for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q) {
          if (c != "\"") s = s c
          else if (substr(line, i + 1, 1) == "\"") { s = s c; i++ }
          else q = 0
        } else if (c == "\"") q = 1
        else if (c == ",") { f[++n] = s; s = "" }
        else s = s c
      }
      f[++n] = s
      return n
    }
    NR == 1 { n = csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
    { csv($0, f); c = f[col["context"]]
      par[c] = f[col["parent"]]; kind[c] = f[col["kind"]]; name[c] = f[col["name"]]
      if ("gpu.pc.samples" in col) smp[c] += f[col["gpu.pc.samples"]] }
    END {
      for (c in kind) {
        if (kind[c] == "kernel") { nm = name[c]; sub(/^kernel /, "", nm)
          sub(/ \[[^]]*\]$/, "", nm); tot[nm] += 0 }
        if (!smp[c]) continue
        for (k = c; k != "" && kind[k] != "kernel"; k = par[k]) ;
        if (k == "") continue
        nm = name[k]; sub(/^kernel /, "", nm); sub(/ \[[^]]*\]$/, "", nm)
        tot[nm] += smp[c]
      }
      for (nm in tot) printf "%s\t%.0f\n", nm, tot[nm]
    }' "$1"
}

# Each example under PC sampling in `mode`: launch counts exact, and every
# kernel that ran for a millisecond or more has samples (a kernel that ran
# for milliseconds without a sample is what a broken collection looks
# like: the H100 runs before the fix had none at all).
run_pcs() { # example mode
  local ex=$1 mode=$2 d=$tmp/$1.pcs.$2 name n got ns nodes smp line
  mkdir -p "$d"
  if ! GPUPROF_BACKENDS=cupti GPUPROF_OUTPUT=$d/m GPUPROF_LOG=info \
       GPUPROF_CUPTI_PC_SAMPLING=1 GPUPROF_CUPTI_PC_SAMPLING_MODE=$mode \
       "$B/examples/cuda/$ex" >"$d/out" 2>"$d/err"; then
    fail "$ex ($mode PC sampling) runs"; cat "$d/out" "$d/err"
    return
  fi
  line=$(grep -m 1 'cupti: PC sampling (' "$d/err")
  echo "# $ex ($mode): ${line#*cupti: }"
  if grep -q 'could not start' "$d/err"; then
    fail "$ex ($mode): PC sampling starts"; grep 'PC sampling' "$d/err"
    return
  fi
  if ! "$G" analyze -o "$d/db" "$d/m" >"$d/analyze" 2>&1 ||
     ! "$G" export --table "$d/db" >"$d/table.csv" 2>"$d/export.err"; then
    fail "$ex ($mode): analyze and export"; cat "$d/analyze" "$d/export.err"
    return
  fi
  profile_rows "$d/table.csv" >"$d/rows"
  pc_rows "$d/table.csv" >"$d/pc"
  while read -r _ name _ n; do
    read -r got ns nodes < <(kernel_sum "$d/rows" "$name")
    smp=$(awk -F '\t' -v k="$name" "$kernel_match"'
      kernel_match($1, k) { s += $2 } END { printf "%.0f\n", s }' "$d/pc")
    if [ "$got" != "$n" ]; then
      fail "$ex ($mode): kernel $name: gpu.count $got, the example launched $n"
    elif [ "$ns" -ge 1000000 ] && [ "$smp" -eq 0 ]; then
      fail "$ex ($mode): kernel $name ran $((ns / 1000)) us with no PC samples"
    else
      pass "$ex ($mode): kernel $name: $n launches, $smp PC samples in $((ns / 1000)) us"
    fi
  done < <(grep '^KERNEL ' "$d/out")
}

for ex in "${examples[@]}"; do
  run_example "$ex"
done
# PC sampling in both modes (GPUPROF_GPU_PCS_MODES to choose).
for mode in ${GPUPROF_GPU_PCS_MODES:-serialized continuous}; do
  for ex in "${examples[@]}"; do
    run_pcs "$ex" "$mode"
  done
done
exit $((fails > 0))
