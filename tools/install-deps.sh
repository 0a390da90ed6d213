#!/usr/bin/env bash
# tools/install-deps.sh GROUP - install the Debian packages a make target
# needs, when they are missing. GROUP is demo, bench or check.
#
# Quiet when everything is present. As root, missing packages are installed
# with apt-get (non-interactive, no recommends); otherwise it names them and
# the command to run, and fails. On a system without dpkg it checks the tools
# and headers directly and says what is missing.
set -eu

group=${1:-check}
# OpenCL: the Khronos headers and the ICD loader to build the backend and the
# example, PoCL to run OpenCL on the CPU when there is no GPU driver.
opencl="ocl-icd-opencl-dev opencl-headers pocl-opencl-icd"
# libdw-dev: the analysis library reads DWARF (source lines, inlined calls).
base="gcc make pkg-config libzstd-dev libunwind-dev libdw-dev $opencl"
# Open MPI: mpicc builds gpuprof-mpi, mpirun runs its test
# (tests/scripts/mpi-analyze.sh skips without them).
mpi="libopenmpi-dev openmpi-bin"
# The Python package (python/gpuprof): pandas for its DataFrames, setuptools
# and pip to install it from the checkout (tests/scripts/python.sh).
py="python3-pandas python3-setuptools python3-pip"
# OTF2 3.0: its headers build `gpuprof export --otf2` (libotf2 is dlopened
# when an export runs), otf2-print reads the archives back in the tests
# (tests/scripts/export-otf2.sh). Without them the export says it was
# built without OTF2 support.
otf2="libotf2-trace-dev"
# Level Zero: the loader's headers build the levelzero backend and its example
# (the loader is dlopened, never linked); its tracing layer is what the
# backend observes calls through. Without a driver the backend says
# "unavailable"; the tests bring a fake driver of their own.
# clang-15 and llvm-spirv-15 build the SPIR-V of examples/levelzero.
ze="libze-dev libze1 clang-15 llvm-spirv-15"
# PAPI: its headers build the papi backend (libpapi is dlopened); papi-tools
# (papi_avail, papi_native_avail) show which events this machine has.
papi="libpapi-dev papi-tools"
# OpenMP through OMPT: clang -fopenmp and LLVM's libomp build the OpenMP
# test programs (tests/scripts/host-deps.sh skips without them).
omp="clang libomp-dev libomp-14-dev"
case "$group" in
  demo) pkgs="$base" ;;
  bench) pkgs="$base $otf2 $ze $papi" ;;
  check) pkgs="$base g++ check zstd binutils python3 $mpi $py $otf2 otf2-tools $ze $papi $omp" ;;
  *) echo "install-deps.sh: unknown group '$group' (demo, bench, check)" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
  # Not Debian: check what we can and say what is missing.
  missing=""
  cc=${CC:-cc}
  have_cc=1
  command -v "$cc" >/dev/null 2>&1 || { have_cc=0; missing="$missing a-C-compiler($cc)"; }
  command -v make >/dev/null 2>&1 || missing="$missing make"
  command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
  if [ "$have_cc" = 1 ]; then
    echo '#include <zstd.h>' | "$cc" -E - >/dev/null 2>&1 || missing="$missing zstd-headers(zstd.h)"
    echo '#include <libunwind.h>' | "$cc" -E - >/dev/null 2>&1 ||
      missing="$missing libunwind-headers(libunwind.h)"
    echo '#include <elfutils/libdwfl.h>' | "$cc" -E - >/dev/null 2>&1 ||
      missing="$missing elfutils-libdw-headers(elfutils/libdwfl.h)"
  fi
  if [ "$group" = check ]; then
    command -v "${CXX:-c++}" >/dev/null 2>&1 || missing="$missing a-C++-compiler(${CXX:-c++})"
    pkg-config --exists check 2>/dev/null || missing="$missing Check(check.pc)"
    command -v nm >/dev/null 2>&1 || missing="$missing binutils(nm,readelf)"
    command -v python3 >/dev/null 2>&1 || missing="$missing python3"
  fi
  if [ -n "$missing" ]; then
    echo "install-deps.sh: this is not a Debian system; missing:$missing" >&2
    echo "install-deps.sh: install them with your package manager and run make again" >&2
    exit 1
  fi
  exit 0
fi

missing=""
for p in $pkgs; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing="$missing $p"
done
if [ -z "$missing" ]; then
  exit 0
fi

cmd="apt-get update && apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: missing Debian packages:$missing" >&2
  echo "install-deps.sh: install them as root: $cmd" >&2
  exit 1
fi
echo "install-deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # $missing is a list of package names
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing; } </dev/null; then
  echo "install-deps.sh: apt-get failed; install them by hand: $cmd" >&2
  exit 1
fi
