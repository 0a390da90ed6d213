# tests/support/fakeze.sh - sourced by the scripts that run programs on the
# fake Level Zero driver (levelzero.sh, levelzero-example.sh,
# levelzero-pipeline.sh), from the repository's root, with B set.
#
# Defines pass/fail (PASS/FAIL lines, $fails counted) and:
# ze_need_backend NAME HINT: "SKIP NAME: the levelzero backend is not built
#   (HINT)" and the end of the script (status 0) unless it was built.
# ze_need NAME FILES...: "SKIP NAME: FILE is not built" and the end of the
#   script (status 0) for the first of FILES missing; then $drv is the
#   fake driver's absolute path, $tmp a directory removed at exit.
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

ze_need_backend() {
  if ! grep -q 'GPUPROF_BUILTIN(levelzero)' "$B/gen/backends.h" 2>/dev/null; then
    echo "SKIP $1: the levelzero backend is not built ($2)"
    exit 0
  fi
}

ze_need() {
  local name=$1 f
  shift
  for f in "$@" "$B/tests/libfakeze.so"; do
    if [ ! -e "$f" ]; then
      echo "SKIP $name: $f is not built"
      exit 0
    fi
  done
  drv=$(cd "$B/tests" && pwd)/libfakeze.so
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
}
