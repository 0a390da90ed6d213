#!/usr/bin/env bash
# tools/install-deps.sh GROUP - install the Debian packages a make target
# needs, when they are missing. GROUP is demo, bench or check.
#
# Quiet when everything is present. As root, missing packages are installed
# with apt-get; otherwise it names them and the command to run, and fails.
set -eu

group=${1:-check}
base="gcc make pkg-config libzstd-dev libunwind-dev"
case "$group" in
  demo|bench) pkgs="$base" ;;
  check) pkgs="$base g++ check zstd binutils" ;;
  *) echo "install-deps.sh: unknown group '$group' (demo, bench, check)" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
  # Not Debian: check what we can and say what is missing.
  missing=""
  command -v cc >/dev/null 2>&1 || missing="$missing a C compiler (cc)"
  command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
  echo '#include <zstd.h>' | cc -E - >/dev/null 2>&1 || missing="$missing zstd headers"
  if [ "$group" = check ]; then
    pkg-config --exists check 2>/dev/null || missing="$missing Check (libcheck)"
  fi
  if [ -n "$missing" ]; then
    echo "install-deps.sh: missing:$missing; install them with your package manager" >&2
    exit 1
  fi
  exit 0
fi

missing=""
for p in $pkgs; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: missing Debian packages:$missing" >&2
  echo "install-deps.sh: run as root: apt-get install$missing" >&2
  exit 1
fi
echo "install-deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing; } </dev/null; then
  echo "install-deps.sh: apt-get failed; install by hand: apt-get install$missing" >&2
  exit 1
fi
