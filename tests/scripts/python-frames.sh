#!/usr/bin/env bash
# Python frames in calling contexts (lib/core/pyframes.c): a CPython 3.11
# program (tests/run/cl_pyframes.py) launching OpenCL kernels through ctypes
# from nested functions, measured with `gpuprof run`. Its launches must sit
# beneath exactly the Python frames that led to them -- function names
# (qualified: Trainer.step) and lines, outermost first -- with ctypes'
# native frames below them, in `gpuprof report DIR`, in a database's
# top-down view and in its folded export; the two calls of step() from two
# lines are two contexts of three launches each. The interpreter's frames
# that start it (main ... PyEval_EvalCode) are the runtime's: a path begins
# at <module>, and --runtime-frames shows them above it.
# GPUPROF_PYTHON_FRAMES=0 gives the native path back, a bad value says so
# in one line and keeps the default.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$PWD/$B/bin/gpuprof
PY=/usr/bin/python3
PROG=tests/run/cl_pyframes.py
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
[ -x "$G" ] || { fail "$G is built (make all)"; exit 1; }
if [ ! -x $PY ] || ! $PY -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "SKIP Python frames (/usr/bin/python3 is not CPython 3.11+)"; exit 0
fi
if ! $PY -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "SKIP Python frames (this build reads CPython 3.11's frames only)"; exit 0
fi
if ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
  echo "SKIP Python frames (no OpenCL platform)"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export POCL_CACHE_DIR=$tmp/pocl
at() { grep -n "# at: $1\$" $PROG | cut -d: -f1; }
L_MOD=$(at module) L_MAIN1=$(at main1) L_MAIN2=$(at main2)
L_STEP=$(at step) L_LAUNCH=$(at launch)

# The full path of every line of a tree report, frames joined by " ; "
# (the name column starts under the header's "context"; two spaces a level;
# a report DIR row deeper than its indentation shows says "(+N) ").
paths() {
  awk 'col == 0 { c = index(tolower($0), "context"); if (c && $0 ~ /[Cc]ontext$/) col = c; next }
       { s = substr($0, col); n = match(s, /[^ ]/); if (!n) next
         d = (n - 1) / 2; s = substr(s, n)
         if (match(s, /^\(\+[0-9]+\) /)) { d += substr(s, 3, RLENGTH - 4); s = substr(s, RLENGTH + 1) }
         name[d] = s; p = name[0]
         for (i = 1; i <= d; i++) p = p " ; " name[i]; print p }'
}
py_chain() { # the expected path from the top to launch, called from line $1
  echo "<module> (cl_pyframes.py:$L_MOD) ; main (cl_pyframes.py:$1) ; Trainer.step (cl_pyframes.py:$L_STEP) ; launch (cl_pyframes.py:$L_LAUNCH) ; _PyObject_MakeTpCall"
}
rt_chain() { # the same with the runtime's frames: the interpreter above
  echo "PyEval_EvalCode+0xbb (python3.11) ; $(py_chain "$1")"
}
# count of <kernel launch> lines whose path holds the chain (report DIR).
launches_under() { # at the top of a path
  grep -F -- "$2" "$1" | grep "^$(echo "$2" | cut -c1-8)" | grep -c ' ; <kernel launch>$'
}

"$G" run -o "$tmp/m" -- $PY $PROG >/dev/null 2>"$tmp/m.err"
rc=$?
"$G" report "$tmp/m" >"$tmp/r.txt" 2>&1
paths <"$tmp/r.txt" >"$tmp/r.paths"
c1=$(launches_under "$tmp/r.paths" "$(py_chain "$L_MAIN1")")
c2=$(launches_under "$tmp/r.paths" "$(py_chain "$L_MAIN2")")
line1=$(grep -F -- "$(py_chain "$L_MAIN1")" "$tmp/r.paths" | grep ' ; <kernel launch>$' |
        sed 's/.*; \(launch (cl_pyframes.py:[0-9]*)\) ; /\1 ; /')
if [ $rc -eq 0 ] && [ "$c1" = 1 ] && [ "$c2" = 1 ] &&
   grep -q "^ *3 .*<kernel launch>$" "$tmp/r.txt" &&
   [ "$(grep -c '^ *3 .*<kernel launch>$' "$tmp/r.txt")" = 2 ]; then
  pass "report DIR: at the top <module>:$L_MOD > main:$L_MAIN1|$L_MAIN2 > Trainer.step:$L_STEP > launch:$L_LAUNCH > _PyObject_MakeTpCall, 3 launches each"
else
  fail "report DIR Python frames (rc=$rc c1=$c1 c2=$c2)"; grep -F "kernel launch" "$tmp/r.paths" | head -3; cat "$tmp/m.err"
fi
"$G" report --runtime-frames "$tmp/m" 2>&1 | paths >"$tmp/rt.paths"
if [ "$(grep -F -- "$(rt_chain "$L_MAIN1")" "$tmp/rt.paths" | grep -c ' ; <kernel launch>$')" = 1 ] &&
   ! grep -q "^<module>" "$tmp/rt.paths" &&
   ! grep -F "kernel launch" "$tmp/r.paths" | grep -q "PyEval_EvalCode"; then
  pass "report DIR --runtime-frames: the interpreter's frames (PyEval_EvalCode) above <module>; hidden by default"
else
  fail "report DIR --runtime-frames"; grep -F "kernel launch" "$tmp/rt.paths" | head -2
fi
# Native frames below the Python ones stay, down to the hook's caller.
if echo "$line1" | grep -q '^launch (cl_pyframes.py:[0-9]*) ; _PyObject_MakeTpCall+0x[0-9a-f]* (python3.11) ; _ctypes.*ffi_call.* ; <kernel launch>$'; then
  pass "report DIR: ctypes' and libffi's native frames below launch()"
else
  fail "native frames below launch(): $line1"
fi
if ! grep -q "_PyEval_EvalFrameDefault" <(grep -F "kernel launch" "$tmp/r.paths"); then
  pass "report DIR: no interpreter-loop frame left in a launch's path"
else
  fail "an interpreter-loop frame in a launch's path"
fi

# A database: its top-down view and the folded export.
"$G" analyze -o "$tmp/db" "$tmp/m" >/dev/null 2>&1
"$G" report --threshold 0 "$tmp/db" 2>&1 | paths >"$tmp/db.paths"
d1=$(grep -F -- "$(py_chain "$L_MAIN1")" "$tmp/db.paths" | grep -c ' ; <kernel launch>$')
d2=$(grep -F -- "$(py_chain "$L_MAIN2")" "$tmp/db.paths" | grep -c ' ; <kernel launch>$')
"$G" export --folded --metric gpu.ops "$tmp/db" >"$tmp/f.txt" 2>&1 ||
  "$G" export --folded "$tmp/db" >"$tmp/f.txt" 2>&1
f1=$(grep -c "^<module> (cl_pyframes.py:$L_MOD);main (cl_pyframes.py:$L_MAIN1);Trainer.step (cl_pyframes.py:$L_STEP);launch (cl_pyframes.py:$L_LAUNCH);_PyObject_MakeTpCall" "$tmp/f.txt")
if [ "$d1" = 1 ] && [ "$d2" = 1 ] && [ "$f1" -ge 1 ]; then
  pass "database: the same Python frames in the top-down view and the folded export"
else
  fail "database Python frames (view $d1 $d2, folded $f1)"; grep -F "kernel launch" "$tmp/db.paths" | head -3
fi

# Off: the native path back; a bad value: one line, the default kept.
GPUPROF_PYTHON_FRAMES=0 "$G" run -o "$tmp/off" -- $PY $PROG >/dev/null 2>&1
"$G" report "$tmp/off" 2>&1 | paths >"$tmp/off.paths"
if ! grep -q "cl_pyframes.py:" "$tmp/off.paths" &&
   [ "$(grep -F "kernel launch" "$tmp/off.paths" | grep -c "PyEval_EvalCode.* ; _PyEval_EvalFrameDefault+0x[0-9a-f]* (python3.11) ; _PyObject_MakeTpCall")" -ge 1 ]; then
  pass "GPUPROF_PYTHON_FRAMES=0: no Python frames, the interpreter loop's native frame instead"
else
  fail "GPUPROF_PYTHON_FRAMES=0"; grep -F "kernel launch" "$tmp/off.paths" | head -2
fi
GPUPROF_PYTHON_FRAMES=maybe "$G" run -o "$tmp/bad" -- $PY $PROG >/dev/null 2>"$tmp/bad.err"
"$G" report "$tmp/bad" 2>&1 | paths >"$tmp/bad.paths"
if [ "$(grep -c "GPUPROF_PYTHON_FRAMES" "$tmp/bad.err")" = 1 ] &&
   grep -q "ignoring GPUPROF_PYTHON_FRAMES=maybe" "$tmp/bad.err" &&
   [ "$(grep -F -- "$(py_chain "$L_MAIN2")" "$tmp/bad.paths" | grep -c ' ; <kernel launch>$')" = 1 ]; then
  pass "GPUPROF_PYTHON_FRAMES=maybe: one line, Python frames kept on"
else
  fail "GPUPROF_PYTHON_FRAMES=maybe"; cat "$tmp/bad.err"
fi
[ $fails -eq 0 ]
