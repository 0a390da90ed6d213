#!/usr/bin/env bash
# Trees that read like HPCToolkit's: tests/sim/tree_prog (no regions; main
# launches k_main from main_work, a thread worker -> thread_work launches
# k_thread) measured on the simulated GPU. Every view shows exactly
#   main -> main_work -> <kernel launch> -> kernel k_main
#   <thread root> -> worker -> thread_work -> <kernel launch> -> kernel k_thread
# at the top (`gpuprof report DIR`; a database's top-down view, folded
# stacks, Hatchet, the table and Python, with source lines between the
# functions), and with --runtime-frames the C library's frames above them
# (_start ... __libc_start_call_main above main, the thread start above
# worker), the sums unchanged.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$PWD/$B/bin/gpuprof
P=$B/tests/tree_prog
SRC=tests/sim/tree_prog.c
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for x in "$G" "$P"; do
  [ -x "$x" ] || { fail "$x is built (make tests)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
at() { grep -n "/\* at: $1 \*/" $SRC | cut -d: -f1; }
L_MAIN=$(at main) L_MW=$(at main_work) L_W=$(at worker) L_TW=$(at thread_work)

if GPUPROF_OUTPUT=$tmp/m GPUPROF_BACKENDS=sim "$P" >"$tmp/run.log" 2>&1; then
  pass "tree_prog runs"
else
  fail "tree_prog runs"; cat "$tmp/run.log"; exit 1
fi

# The paths of a tree report, names joined by ";" (the name column starts
# under "Context"; two spaces a level; "(+N) " a row deeper than shown),
# offsets dropped (+0x1a: they depend on the compiler).
paths() {
  awk 'col == 0 { c = index($0, "Context"); if (c && $0 ~ /Context$/) col = c; next }
       { s = substr($0, col); n = match(s, /[^ ]/); if (!n) next
         d = (n - 1) / 2; s = substr(s, n)
         if (match(s, /^\(\+[0-9]+\) /)) { d += substr(s, 3, RLENGTH - 4); s = substr(s, RLENGTH + 1) }
         gsub(/\+0x[0-9a-f]+/, "", s); name[d] = s; p = name[0]
         for (i = 1; i <= d; i++) p = p ";" name[i]; print p }'
}

# report DIR: the tree of GPU operations.
"$G" report "$tmp/m" | paths >"$tmp/dir"
cat >"$tmp/want" <<W
<thread root>
<thread root>;worker (tree_prog)
<thread root>;worker (tree_prog);thread_work (tree_prog)
<thread root>;worker (tree_prog);thread_work (tree_prog);<kernel launch>
<thread root>;worker (tree_prog);thread_work (tree_prog);<kernel launch>;kernel k_thread
main (tree_prog)
main (tree_prog);main_work (tree_prog)
main (tree_prog);main_work (tree_prog);<kernel launch>
main (tree_prog);main_work (tree_prog);<kernel launch>;kernel k_main
W
if diff "$tmp/want" "$tmp/dir" >"$tmp/d"; then
  pass "report DIR: <thread root> -> worker -> thread_work -> k_thread, main -> main_work -> k_main, nothing above"
else
  fail "report DIR tree"; cat "$tmp/d"
fi
"$G" report --runtime-frames "$tmp/m" | paths >"$tmp/dir.rt"
top=$(grep 'kernel k_main$' "$tmp/dir.rt")
ttop=$(grep 'kernel k_thread$' "$tmp/dir.rt")
case $top in
  "_start (tree_prog);"*";main (tree_prog);main_work (tree_prog);<kernel launch>;kernel k_main")
    pass "report DIR --runtime-frames: $top" ;;
  *) fail "report DIR --runtime-frames, main: $top" ;;
esac
case $ttop in
  *"libc"*";worker (tree_prog);thread_work (tree_prog);<kernel launch>;kernel k_thread")
    pass "report DIR --runtime-frames: $ttop" ;;
  *) fail "report DIR --runtime-frames, the thread: $ttop" ;;
esac

# A database: the top-down view (source lines between the functions).
"$G" analyze -j 1 -o "$tmp/db" "$tmp/m" >/dev/null 2>&1 || { fail "analyze"; exit 1; }
# The C library's frames: the report names them as the database's views do
# (function names from the symbols of its debug file, DWARF's there).
"$G" report --runtime-frames --metric gpu.time --threshold 0 "$tmp/db" |
  sed -n '4,$p' | cut -c40- | sed 's/^ *//' | grep '(libc.so.6)$' | sort >"$tmp/libc.db"
tr ';' '\n' <"$tmp/dir.rt" | grep '(libc.so.6)$' | sort -u >"$tmp/libc.dir"
if [ -z "$(ls /usr/lib/debug/.build-id 2>/dev/null)" ]; then
  echo "SKIP the C library's frame names (no debug files: libc6-dbg)"
elif [ -s "$tmp/libc.dir" ] && diff "$tmp/libc.dir" "$tmp/libc.db" >"$tmp/d"; then
  pass "the C library's frames named alike in report DIR and report DB: $(tr '\n' ' ' <"$tmp/libc.dir")"
else
  fail "the C library's frame names differ (DIR < > DB)"; cat "$tmp/d"
fi
cat >"$tmp/want" <<W
<thread root>
  worker (tree_prog)
    tree_prog.c:$L_W
      thread_work (tree_prog)
        tree_prog.c:$L_TW
          <kernel launch>
            kernel k_thread
main (tree_prog)
  tree_prog.c:$L_MAIN
    main_work (tree_prog)
      tree_prog.c:$L_MW
        <kernel launch>
          kernel k_main
W
"$G" report --metric gpu.time --threshold 0 "$tmp/db" | sed -n '4,$p' | cut -c40- >"$tmp/view"
if diff "$tmp/want" "$tmp/view" >"$tmp/d"; then
  pass "report DB: the same tree, with source lines"
else
  fail "report DB tree"; cat "$tmp/d"
fi
"$G" export --folded --metric gpu.time "$tmp/db" >"$tmp/f"
cat >"$tmp/want" <<W
<thread root>;worker (tree_prog);tree_prog.c:$L_W;thread_work (tree_prog);tree_prog.c:$L_TW;<kernel launch>;kernel k_thread 2000
main (tree_prog);tree_prog.c:$L_MAIN;main_work (tree_prog);tree_prog.c:$L_MW;<kernel launch>;kernel k_main 1000
W
if diff "$tmp/want" "$tmp/f" >"$tmp/d"; then
  pass "export --folded: two stacks, 2000 + 1000 ns"
else
  fail "export --folded"; cat "$tmp/d"
fi
"$G" export --folded --metric gpu.time --runtime-frames "$tmp/db" >"$tmp/f.rt"
if grep -q "^_start.*;__libc_start_call_main (libc.so.6);libc_start_call_main.h:[0-9]*;main (tree_prog);tree_prog.c:$L_MAIN;.*kernel k_main 1000$" "$tmp/f.rt" ||
   grep -q "^_start.*;main (tree_prog);tree_prog.c:$L_MAIN;.*kernel k_main 1000$" "$tmp/f.rt"; then
  if grep -q "^.*libc.*;worker (tree_prog);.*kernel k_thread 2000$" "$tmp/f.rt" &&
     [ "$(awk '{ s += $NF } END { print s }' "$tmp/f.rt")" = 3000 ]; then
    pass "export --folded --runtime-frames: the C library above main and worker, the same 3000 ns"
  else
    fail "export --folded --runtime-frames, the thread"; cat "$tmp/f.rt"
  fi
else
  fail "export --folded --runtime-frames, main"; cat "$tmp/f.rt"
fi

# Hatchet and the table: the same tree; the runtime's frames on request.
"$G" export --hatchet "$tmp/db" >"$tmp/h.json"
"$G" export --hatchet --runtime-frames "$tmp/db" >"$tmp/hrt.json"
if python3 - "$tmp/h.json" "$tmp/hrt.json" <<'PY'; then
import json, sys
def paths(n, pre=()):
    p = pre + (n["frame"]["name"],)
    yield p, n["metrics"]
    for k in n["children"]:
        yield from paths(k, p)
h = dict(paths(json.load(open(sys.argv[1]))[0]))
names = {p[-1] for p in h}
assert ("<program root>", "<thread root>", "worker (tree_prog)") in h, sorted(h)
assert ("<program root>", "main (tree_prog)") in h, sorted(h)
assert not any(n.startswith(("_start", "__libc", "start_thread", "__clone")) for n in names), names
rt = dict(paths(json.load(open(sys.argv[2]))[0]))
assert len(rt) > len(h) and "<thread root>" not in {p[-1] for p in rt}
root = ("<program root>",)
assert h[root]["gpu.time (inc)"] == rt[root]["gpu.time (inc)"] == 3000
PY
  pass "export --hatchet: <program root> -> main, <program root> -> <thread root> -> worker; --runtime-frames the rest"
else
  fail "export --hatchet"
fi
"$G" export --table "$tmp/db" >"$tmp/t.csv"
if python3 - "$tmp/t.csv" <<'PY'; then
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
name = {r["context"]: r["name"] for r in rows}
par = {r["context"]: r["parent"] for r in rows}
w = [c for c, n in name.items() if n == "worker (tree_prog)"][0]
assert name[par[w]] == "<thread root>" and name[par[par[w]]] == "<program root>"
m = [c for c, n in name.items() if n == "main (tree_prog)"][0]
assert name[par[m]] == "<program root>"
assert sum(float(r["gpu.time"]) for r in rows) == 3000
PY
  pass "export --table: parents as shown (worker beneath <thread root> beneath the root)"
else
  fail "export --table"
fi

# Python, where pandas is.
PY=
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import pandas' >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -n "$PY" ]; then
  if PYTHONPATH=$PWD/python "$PY" - "$tmp/db" <<'PY'; then
import sys
import gpuprof
db = gpuprof.open(sys.argv[1])
v = db.view("gpu.time")
top = sorted(v[v["depth"] == 1]["name"])
assert top == ["<thread root>", "main (tree_prog)"], top
w = v[v["name"] == "worker (tree_prog)"].iloc[0]
assert w["depth"] == 2 and w["gpu.time (inc)"] == 2000
every = db.view("gpu.time", runtime_frames=True)
assert "<thread root>" not in set(every["name"])
assert every[every["name"] == "worker (tree_prog)"].iloc[0]["depth"] > 2
assert v["gpu.time"].sum() == every["gpu.time"].sum() == 3000
PY
    pass "Python view(): the same tree, depths among the contexts shown"
  else
    fail "Python view()"
  fi
else
  echo "SKIP Python (no python3 with pandas)"
fi
[ $fails -eq 0 ]
