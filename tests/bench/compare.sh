#!/usr/bin/env bash
# compare.sh - `make bench-compare BASE=<rev>`: every BENCH figure of the
# working tree against the same figure of revision BASE, on this machine,
# in one sitting.
#
#   BASE=<rev>       the revision to compare with (default: main)
#   ROUNDS=<n>       rounds (default 3); each round runs every benchmark
#                    program of both trees, base and new in turn (which goes
#                    first alternates), so slow drifts of a shared machine
#                    fall on both alike
#   BENCHES="a b"    only these programs (bench_<a>, ...; opencl_demo for
#                    the OpenCL demo script); default: all of both trees
#   B=<dir>          the working tree's build directory (default build)
#
# The base is exported with `git archive` into $B/bench-base/<hash>/ and
# built there with its own Makefile (its build directory inside it), so the
# working tree's build is untouched; a later run for the same hash reuses
# it. Each figure's value is the median over the rounds; its noise is the
# larger of the two sides' spreads across rounds ((max - min) / median of
# the same binary), at least NOISE_FLOOR (default 0.03). The verdict:
#   worse     the figure moved the wrong way by more than its noise
#   better    the right way by more than its noise
#   ~         within the noise
#   new/gone  only in the working tree / only in the base
# Which way is better comes from doc/BENCH.md's table (column "better":
# lower, higher, or - for counts that only describe the run); a figure not
# in the table is judged by its unit (a rate "/s" higher, anything else
# lower) and marked "?". Exit status 0 whatever the verdicts (a report,
# not a gate); 1 when a build fails.
set -eu
BASE=${BASE:-main}
ROUNDS=${ROUNDS:-3}
B=${B:-build}
NOISE_FLOOR=${NOISE_FLOOR:-0.03}
root=$(git rev-parse --show-toplevel)
cd "$root"
hash=$(git rev-parse --verify "$BASE^{commit}") ||
  { echo "bench-compare: no revision '$BASE'" >&2; exit 1; }
base=$B/bench-base/$hash
log=$B/bench-base/log
mkdir -p "$B/bench-base"
: >"$log"

# The bench programs a tree has: bench_<name> for each tests/bench/bench_*.c
# (the Makefile leaves out those this machine cannot build), plus the
# OpenCL demo script.
programs() { # tree
  local f n
  for f in "$1"/tests/bench/bench_*.c; do
    [ -e "$f" ] || continue
    n=${f##*/}
    echo "${n%.c}"
  done
  [ -x "$1/tests/bench/opencl_demo.sh" ] && echo opencl_demo
  return 0
}
wanted() { # name
  [ -z "${BENCHES:-}" ] && return 0
  local w
  for w in $BENCHES; do
    [ "$1" = "bench_$w" ] || [ "$1" = "$w" ] && return 0
  done
  return 1
}

build() { # tree builddir label
  local tree=$1 bd=$2 targets="" p
  for p in $(programs "$tree"); do
    wanted "$p" || continue
    [ "$p" = opencl_demo ] || targets="$targets $bd/bench/$p"
  done
  echo "# bench-compare: building $3 ($tree)"
  # Benchmarks this machine cannot build (a missing SDK) are left out by
  # the Makefile's own lists: build each on its own, keep what builds.
  make -C "$tree" --no-print-directory -j2 B="$bd" all >>"$log" 2>&1 ||
    { echo "bench-compare: building $3 failed (see $log)" >&2; exit 1; }
  for p in $targets; do
    make -C "$tree" --no-print-directory -j2 B="$bd" "$p" >>"$log" 2>&1 ||
      echo "# bench-compare: $3: ${p##*/} not built (see $log)"
  done
}

if [ ! -f "$base/.complete" ]; then
  rm -rf "$base"
  mkdir -p "$base"
  git archive "$hash" | tar -x -C "$base"
  touch "$base/.complete"
fi
build "$base" build "base $BASE (${hash:0:12})"
build "$root" "$B" "the working tree"

out=$B/bench-base/figures
: >"$out"
run_one() { # tree builddir program side round
  local tree=$1 bd=$2 p=$3 side=$4 r=$5 lines
  if [ "$p" = opencl_demo ]; then
    lines=$(cd "$tree" && B="$bd" tests/bench/opencl_demo.sh 2>>"$root/$log") || true
  elif [ -x "$tree/$bd/bench/$p" ]; then
    lines=$(cd "$tree" && "$bd/bench/$p" 2>>"$root/$log") || true
  else
    return 0
  fi
  printf '%s\n' "$lines" | awk -v s="$side" -v r="$r" \
    '$1 == "BENCH" && NF >= 4 { print s, r, $2, $3, $4 }' >>"$out"
}

all=$( (programs "$base"; programs "$root") | sort -u)
for r in $(seq 1 "$ROUNDS"); do
  echo "# bench-compare: round $r of $ROUNDS"
  for p in $all; do
    wanted "$p" || continue
    if [ $((r % 2)) -eq 1 ]; then
      run_one "$base" build "$p" base "$r"
      run_one "$root" "$B" "$p" new "$r"
    else
      run_one "$root" "$B" "$p" new "$r"
      run_one "$base" build "$p" base "$r"
    fi
  done
done

# Which way each figure is better, from doc/BENCH.md's table rows:
# | `name` | unit | better | ...
better=$B/bench-base/better
# (a name with <part> stands for a family: aggregate_mpi_np2_phase_<step>_ms)
sed -n 's/^| `\([a-z0-9_<>]*\)` | \([^|]*\) | \(lower\|higher\|-\) |.*/\1 \3/p' \
  doc/BENCH.md 2>/dev/null >"$better" || : >"$better"

echo
printf '%-36s %-12s %12s %12s %8s %7s  %s\n' figure unit base new new/base \
  noise verdict
awk -v floor="$NOISE_FLOOR" '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++)
      for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
        t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
      }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function spread(list,   n, a, i, lo, hi, m) {
    n = split(list, a, " ")
    lo = hi = a[1] + 0
    for (i = 2; i <= n; i++) {
      if (a[i] + 0 < lo) lo = a[i] + 0
      if (a[i] + 0 > hi) hi = a[i] + 0
    }
    m = median(list)
    return m != 0 ? (hi - lo) / (m < 0 ? -m : m) : 0
  }
  function direction(k,   p, re) {
    if (k in dir) return dir[k]
    for (p in dir)
      if (index(p, "<")) {
        re = p; gsub(/<[^>]*>/, "[a-z0-9_]+", re)
        if (k ~ ("^" re "$")) return dir[p]
      }
    return ""
  }
  FILENAME == ARGV[1] { dir[$1] = $2; next }
  {
    key = $3; unit[key] = $5
    if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
    if ($1 == "base") b[key] = b[key] " " $4; else w[key] = w[key] " " $4
  }
  END {
    for (i = 1; i <= nk; i++) {
      k = order[i]
      if (!(k in b)) {
        printf "%-36s %-12s %12s %12g %8s %7s  new\n", k, unit[k], "-",
               median(w[k]), "-", "-"; continue
      }
      if (!(k in w)) {
        printf "%-36s %-12s %12g %12s %8s %7s  gone\n", k, unit[k],
               median(b[k]), "-", "-", "-"; continue
      }
      mb = median(b[k]); mw = median(w[k])
      nz = spread(b[k]); if (spread(w[k]) > nz) nz = spread(w[k])
      if (nz < floor) nz = floor
      d = direction(k); mark = ""
      if (d == "") { d = unit[k] ~ /\/s$/ ? "higher" : "lower"; mark = " ?" }
      ratio = mb != 0 ? mw / mb : (mw == 0 ? 1 : 0)
      v = "~"
      if (d == "lower" && mb > 0 && ratio > 1 + nz) v = "worse"
      if (d == "lower" && mb > 0 && ratio < 1 - nz) v = "better"
      if (d == "higher" && mb > 0 && ratio < 1 - nz) v = "worse"
      if (d == "higher" && mb > 0 && ratio > 1 + nz) v = "better"
      if (d == "-") v = "(count)"
      else if (mb == 0 && mw != 0) v = "(base 0)"
      printf "%-36s %-12s %12g %12g %8.3f %6.1f%%  %s%s\n", k, unit[k], mb,
             mw, ratio, 100 * nz, v, mark
    }
  }' "$better" "$out"
echo
echo "# bench-compare: base $BASE (${hash:0:12}), $ROUNDS rounds; medians;" \
     "noise = spread across rounds of one binary (floor ${NOISE_FLOOR});" \
     "log: $log"
