#!/bin/bash
# tools/db-golden.sh - databases of a fixed corpus, for comparing two builds
# byte for byte (a refactor of analysis/ must change none of them):
#
#   tools/db-golden.sh corpus CORPUS            measure once, with build/
#   tools/db-golden.sh dbs BUILD CORPUS OUT     analyze CORPUS with BUILD's
#                                               gpuprof (and gpuprof-mpi)
#   cmp -r, or: (cd OUT && md5sum */*) | diff - <(cd OUT2 && md5sum */*)
#
# The corpus is measured once and analyzed by both builds: a database's
# identity hashes its inputs' paths and heads, so both must read the same
# files at the same paths. The corpus: tests/sim/sim_demo (simulated GPU,
# two host threads, traced), tests/sim/structure_prog, examples/regions,
# OpenCL's jacobi on PoCL (traced) when built, gen_measure (SPMD and not)
# and gen_pc_measure (the H100 fixture's PC samples). Each is analyzed with
# -j1, -j2, --memory 1M, --no-structure, and on two MPI ranks when
# gpuprof-mpi and mpirun are there. No checksum list is committed: the
# formats change legitimately; compare two builds instead.
set -u
mode=${1:-}
case "$mode" in
corpus)
  C=$2; B=build
  rm -rf "$C" && mkdir -p "$C"
  GPUPROF_OUTPUT=$C/sim GPUPROF_BACKENDS=sim GPUPROF_TRACE=1 $B/tests/sim_demo >/dev/null
  GPUPROF_OUTPUT=$C/sim-plain GPUPROF_BACKENDS=sim $B/tests/sim_demo >/dev/null
  GPUPROF_OUTPUT=$C/structure GPUPROF_BACKENDS=sim $B/tests/structure_prog >/dev/null
  GPUPROF_OUTPUT=$C/regions $B/examples/regions >/dev/null
  if [ -x $B/examples/opencl/jacobi ]; then
    POCL_CACHE_DIR=$C/.pocl GPUPROF_OUTPUT=$C/opencl GPUPROF_TRACE=1 \
      $B/examples/opencl/jacobi >/dev/null 2>&1
    rm -rf "$C/.pocl"
  fi
  mkdir -p "$C/gen-spmd" "$C/gen-mixed"
  $B/tests/gen_measure "$C/gen-spmd" 384 4 3 1000 spmd
  $B/tests/gen_measure "$C/gen-mixed" 12 2 7 3000
  $B/tests/gen_pc_measure "$PWD/tests/fixtures/gpu-sm90" "$C/pc" >/dev/null
  ls "$C"
  ;;
dbs)
  B=$2; C=$3; O=$4
  rm -rf "$O" && mkdir -p "$O"
  for d in "$C"/*/; do
    d=${d%/}; n=$(basename "$d")
    for v in "j1:-j 1" "j2:-j 2" "mem:-j 2 --memory 16M" "nostruct:--no-structure"; do
      tag=${v%%:*}; opt=${v#*:}
      $B/bin/gpuprof analyze $opt -o "$O/$n.$tag" "$d" >/dev/null 2>"$O/$n.$tag.err" ||
        echo "analyze $opt $n failed: $(cat "$O/$n.$tag.err")"
      rm -f "$O/$n.$tag.err"
    done
    if [ -x $B/bin/gpuprof-mpi ] && command -v mpirun >/dev/null; then
      mpirun --allow-run-as-root --oversubscribe -np 2 $B/bin/gpuprof-mpi \
        analyze -j 1 -o "$O/$n.np2" "$d" >/dev/null 2>&1 ||
        echo "gpuprof-mpi $n failed"
    fi
  done
  # analysis.txt says how each was made (the budget, the rounds): it
  # differs by machine and option, the database's own files never do.
  (cd "$O" && find . -type f ! -name analysis.txt | sort | xargs md5sum) >"$O.md5"
  wc -l <"$O.md5"
  ;;
*)
  sed -n '2,18p' "$0"; exit 2 ;;
esac
