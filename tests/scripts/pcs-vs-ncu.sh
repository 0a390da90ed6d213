#!/usr/bin/env bash
# tests/scripts/pcs-vs-ncu.sh - PC sampling's stall reasons against Nsight
# Compute's, kernel by kernel.
#
#   pcs-vs-ncu.sh          offline (make check): the two readers and the
#                          comparison on known data -- Nsight Compute's
#                          per-instruction samples of six kernels on an H100
#                          (tests/fixtures/gpu-sm90/ncu-source-sass.csv) and a
#                          profile with PC samples made by check_cupti.
#   pcs-vs-ncu.sh --gpu [serialized|continuous ...]
#                          on a GPU machine, in one go: builds
#                          tests/fixtures/gpu-sm90/kernels.cu (six kernels, one
#                          dominant stall reason each) with libgpuprof, runs
#                          it and the CUDA examples under each mode with
#                          GPUPROF_CUPTI_PC_SAMPLING=1 and under
#                          `ncu --section WarpStateStats --section
#                          SourceCounters`, and prints for every kernel the
#                          share of samples per stall reason, ours beside
#                          ncu's, with one PASS/FAIL line per kernel: the
#                          same dominant reason. SKIP without nvidia-smi or
#                          ncu.
#
# The readers print "kernel<TAB>reason<TAB>samples" lines, kernels by
# their short name (chase, not chase(const int *, int *, int) or
# _Z5chasePKiPii), reasons by our names (long_scoreboard: ncu's
# stall_long_sb).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$B/bin/gpuprof
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

csv_fn='
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
  function short(k) {
    sub(/^kernel /, "", k); sub(/ \[[^]]*\]$/, "", k); sub(/^void /, "", k)
    if (k ~ /^_Z[0-9]+/) { match(k, /^_Z[0-9]+/)
      k = substr(k, RLENGTH + 1, substr(k, 3, RLENGTH - 2) + 0) }
    sub(/[(<].*$/, "", k)
    return k
  }'

# ncu_sums SOURCE.csv: from `ncu -i R --page source --csv --print-source
# sass`: blocks of "Kernel Name",<name>; a header; one row per instruction.
ncu_sums() {
  awk "$csv_fn"'
    BEGIN {
      split("barrier:barrier branch_resolving:branch_resolving " \
            "dispatch:dispatch_stall drain:drain imc:imc_miss lg:lg_throttle " \
            "long_sb:long_scoreboard math:math_pipe_throttle membar:membar " \
            "mio:mio_throttle misc:misc no_inst:no_instructions " \
            "not_selected:not_selected selected:selected " \
            "short_sb:short_scoreboard sleep:sleeping tex:tex_throttle " \
            "wait:wait", m, " ")
      for (i in m) { split(m[i], p, ":"); ours[p[1]] = p[2] }
    }
    { n = csv($0, f) }
    f[1] == "Kernel Name" { kern = short(f[2]); hdr = 1; next }
    hdr { delete col; for (i = 1; i <= n; i++) col[i] = f[i]; hdr = 0; next }
    kern != "" {
      for (i = 1; i <= n; i++)
        if (col[i] ~ /^stall_/ && col[i] !~ /Not Issued/ && f[i] + 0 > 0) {
          r = substr(col[i], 7); r = (r in ours) ? ours[r] : r
          s[kern "\t" r] += f[i]
        }
    }
    END { for (k in s) printf "%s\t%.0f\n", k, s[k] }' "$1" | sort
}

# ours_sums TABLE.csv: from `gpuprof export --table DB`: every row's
# exclusive gpu.pc.stall.* values, summed over the kernel it lies beneath
# (or is).
ours_sums() {
  awk "$csv_fn"'
    NR == 1 { n = csv($0, h)
              for (i = 1; i <= n; i++) {
                col[h[i]] = i
                if (h[i] ~ /^gpu\.pc\.stall\.[a-z_]+$/) st[i] = substr(h[i], 14)
              }
              next }
    { csv($0, f); c = f[col["context"]]
      par[c] = f[col["parent"]]; kind[c] = f[col["kind"]]; name[c] = f[col["name"]]
      for (i in st) v[c "\t" st[i]] += f[i] }
    END {
      for (key in v) {
        if (v[key] == 0) continue
        split(key, kr, "\t"); c = kr[1]
        while (c != "" && kind[c] != "kernel") c = par[c]
        if (c == "") continue
        s[short(name[c]) "\t" kr[2]] += v[key]
      }
      for (k in s) printf "%s\t%.0f\n", k, s[k]
    }' "$1" | sort
}

# compare OURS NCU [label]: per kernel both have, the shares side by side;
# PASS when the dominant reason is the same.
compare() {
  awk -F '\t' -v label="${3:-}" '
    FNR == 1 { file++ }
    { s[file, $1, $2] += $3; tot[file, $1] += $3; k[$1] = 1; r[$2] = 1 }
    END {
      for (kn in k) {
        if (!tot[1, kn] || !tot[2, kn]) continue
        printf "# %s%s: %d samples ours, %d ncu\n", kn, label, tot[1, kn], tot[2, kn]
        printf "#   %-20s %7s %7s %7s\n", "reason", "ours%", "ncu%", "diff"
        top1 = top2 = ""; max = 0
        for (rn in r) {
          a = 100 * s[1, kn, rn] / tot[1, kn]; b = 100 * s[2, kn, rn] / tot[2, kn]
          if (a < 0.05 && b < 0.05) continue
          printf "#   %-20s %7.1f %7.1f %+7.1f\n", rn, a, b, a - b
          if (top1 == "" || s[1, kn, rn] > s[1, kn, top1]) top1 = rn
          if (top2 == "" || s[2, kn, rn] > s[2, kn, top2]) top2 = rn
          d = a - b; if (d < 0) d = -d; if (d > max) max = d
        }
        if (top1 == top2)
          printf "PASS %s%s: dominant stall reason %s in both (largest difference %.1f points)\n", kn, label, top1, max
        else
          printf "FAIL %s%s: dominant stall reason %s ours, %s ncu (largest difference %.1f points)\n", kn, label, top1, top2, max
      }
    }' "$1" "$2"
}

# ---- offline: the readers on known data ------------------------------------
self_test() {
  local tmp fx=tests/fixtures/gpu-sm90/ncu-source-sass.csv
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  ncu_sums "$fx" >"$tmp/ncu"
  # Each kernel's stall samples add up to its "All Samples" column.
  local want got
  want=$(awk "$csv_fn"'
    { n = csv($0, f) }
    f[1] == "Kernel Name" { kern = short(f[2]); hdr = 1; next }
    hdr { for (i = 1; i <= n; i++) if (f[i] == "Warp Stall Sampling (All Samples)") a = i
          hdr = 0; next }
    kern != "" { t[kern] += f[a] }
    END { for (k in t) printf "%s %.0f\n", k, t[k] }' "$fx" | sort)
  got=$(awk -F '\t' '{ t[$1] += $3 } END { for (k in t) printf "%s %.0f\n", k, t[k] }' \
    "$tmp/ncu" | sort)
  if [ "$got" = "$want" ] && [ "$(wc -l <<<"$got")" = 6 ]; then
    pass "ncu reader: six kernels, each reason's samples add up to All Samples"
  else
    fail "ncu reader: per kernel sums"; diff <(echo "$want") <(echo "$got")
  fi
  if grep -qx "$(printf 'chase\tlong_scoreboard\t')[0-9]*" "$tmp/ncu" &&
     [ "$(awk -F '\t' '$1 == "chase"' "$tmp/ncu" | sort -t "$(printf '\t')" -k3 -n | tail -n 1 | cut -f 2)" = long_scoreboard ]; then
    pass "ncu reader: chase (a pointer chase) is dominated by long_scoreboard"
  else
    fail "ncu reader: chase's dominant reason"; grep '^chase' "$tmp/ncu"
  fi
  # Ours: the profile check_cupti's serialized case writes (two launches
  # of kA: 5 selected, 10 long_scoreboard, 2 + 6 barrier).
  if [ ! -x "$B/tests/check_cupti" ]; then
    echo "SKIP our reader: $B/tests/check_cupti is not built"
  else
    mkdir -p "$tmp/t"
    TMPDIR=$tmp/t CK_RUN_CASE=pcs_sequence_serialized CK_FORK=no \
      "$B/tests/check_cupti" >"$tmp/ck" 2>&1
    local m
    m=$(ls -d "$tmp"/t/cupti.* 2>/dev/null | head -n 1)
    if [ -z "$m" ] || ! grep -q '100%' "$tmp/ck"; then
      echo "SKIP our reader: check_cupti made no profile (no libcupti?)"
    elif ! "$G" analyze -o "$tmp/db" "$m" >"$tmp/an" 2>&1 ||
         ! "$G" export --table "$tmp/db" >"$tmp/table.csv" 2>"$tmp/ex"; then
      fail "our reader: analyze and export"; cat "$tmp/an" "$tmp/ex"
    else
      ours_sums "$tmp/table.csv" >"$tmp/ours"
      want=$(printf 'kA\tbarrier\t8\nkA\tlong_scoreboard\t10\nkA\tselected\t5')
      if [ "$(cat "$tmp/ours")" = "$want" ]; then
        pass "our reader: kA's samples per reason over both launches"
      else
        fail "our reader: kA 5 selected, 10 long_scoreboard, 8 barrier; got:"
        cat "$tmp/ours"
      fi
      printf '"Kernel Name","kA(int)",\n"Address","Source","stall_selected","stall_long_sb","stall_barrier","stall_barrier (Not Issued)"\n"0x1","X","5","10","8","3"\n' \
        >"$tmp/ncu-kA.csv"
      ncu_sums "$tmp/ncu-kA.csv" >"$tmp/ncukA"
      compare "$tmp/ours" "$tmp/ncukA" >"$tmp/cmp"
      if grep -q '^PASS kA: dominant stall reason long_scoreboard in both (largest difference 0.0 points)$' "$tmp/cmp" &&
         grep -qE '^#   long_scoreboard +43\.5 +43\.5 +\+0\.0$' "$tmp/cmp"; then
        pass "comparison: shares side by side, the dominant reason checked"
      else
        fail "comparison table"; cat "$tmp/cmp"
      fi
    fi
  fi
}

# ---- on a GPU ----------------------------------------------------------------
# The fixture kernels measured by libgpuprof: kernels.cu's main, renamed,
# between gpuprof_init and gpuprof_finalize.
build_fixture() { # out
  local nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
  cat >"$1.cu" <<EOF
#define main fixture_main
#include "$PWD/tests/fixtures/gpu-sm90/kernels.cu"
#undef main
#include <gpuprof.h>
int main()
{
    gpuprof_init(NULL);
    int rc = fixture_main();
    gpuprof_finalize();
    return rc;
}
EOF
  "$nvcc" -O2 -lineinfo -arch=sm_90 -Iinclude -o "$1" "$1.cu" -L"$B/lib" \
    -lgpuprof -Xlinker -rpath,"$PWD/$B/lib"
}

gpu_run() { # modes...
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 ||
    { echo "SKIP no NVIDIA GPU (no nvidia-smi)"; return 0; }
  command -v ncu >/dev/null 2>&1 || { echo "SKIP no ncu in PATH"; return 0; }
  [ -x "$G" ] || { fail "$G is built (run make first)"; return; }
  local tmp modes=("$@") prog name bin mode d
  [ ${#modes[@]} -gt 0 ] || modes=(serialized continuous)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  if ! build_fixture "$tmp/stalls" >"$tmp/nvcc" 2>&1; then
    fail "the fixture kernels build"; cat "$tmp/nvcc"; return
  fi
  for prog in "$tmp/stalls" "$B/examples/cuda/saxpy" "$B/examples/cuda/streams"; do
    name=$(basename "$prog")
    [ -x "$prog" ] || { fail "$prog is built"; continue; }
    d=$tmp/$name
    mkdir -p "$d"
    if ! GPUPROF_BACKENDS=none ncu --section WarpStateStats \
         --section SourceCounters -f -o "$d/r" "$prog" >"$d/ncu.out" 2>&1 ||
       ! ncu -i "$d/r.ncu-rep" --page source --csv --print-source sass \
         >"$d/src.csv" 2>"$d/ncu.err"; then
      fail "$name under ncu"; tail -n 5 "$d/ncu.out" "$d/ncu.err"; continue
    fi
    ncu_sums "$d/src.csv" >"$d/ncu"
    for mode in "${modes[@]}"; do
      rm -rf "$d/m" "$d/db"
      if ! GPUPROF_BACKENDS=cupti GPUPROF_OUTPUT=$d/m GPUPROF_LOG=info \
           GPUPROF_CUPTI_PC_SAMPLING=1 GPUPROF_CUPTI_PC_SAMPLING_MODE=$mode \
           "$prog" >"$d/out" 2>"$d/err" ||
         ! "$G" analyze -o "$d/db" "$d/m" >/dev/null 2>&1 ||
         ! "$G" export --table "$d/db" >"$d/table.csv" 2>/dev/null; then
        fail "$name ($mode) runs, analyze, export"; tail -n 5 "$d/err"; continue
      fi
      grep 'PC sampling' "$d/err" | sed 's/^/# /'
      ours_sums "$d/table.csv" >"$d/ours.$mode"
      compare "$d/ours.$mode" "$d/ncu" " ($mode)"
    done
  done
}

if [ "${1:-}" = --gpu ]; then
  shift
  gpu_run "$@"
else
  self_test
fi
exit $((fails > 0))
