# tests/support/mountns.sh - sourced by the scripts that fill a small tmpfs
# (analyze-disk-full.sh, export-otf2-disk-full.sh, output-faults.sh).
#
# in_private_mounts NAME ARGS...: the first time, re-executes the calling
# script with ARGS inside a private mount namespace (`unshare -m`), so the
# tmpfs it mounts is seen by nothing else and goes away with it; there,
# returns. Without root or `unshare -m` it prints "SKIP NAME: ..." and ends
# the script with status 0.
in_private_mounts() {
  local name=$1
  shift
  [ -n "${GP_PRIVATE_MOUNTS:-}" ] && return 0
  if [ "$(id -u)" != 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
    echo "SKIP $name: mounting a small tmpfs needs root and unshare -m"
    exit 0
  fi
  GP_PRIVATE_MOUNTS=1 exec unshare -m --propagation private bash "$0" "$@"
}
