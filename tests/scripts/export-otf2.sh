#!/usr/bin/env bash
# gpuprof export --otf2 end to end: tests/sim/sim_demo (two host threads,
# each with its own stream of the simulated GPU: per stream 20 x "stencil"
# 3000 ns, 20 x "reduce" 1000 ns, 20 copies d2h 2000 ns, one copy h2d
# 16000 ns and a graph of "init_a" 500 ns and "init_b" 700 ns; per thread
# the regions "setup" and "timesteps" around 63 API calls and a sync) runs
# with GPUPROF_TRACE=1, `gpuprof analyze` makes its database, and the
# archive is read back with otf2-print (Score-P's reader): nothing on
# stderr, and per location exactly the events, region names, durations and
# nesting the program made, timestamps never decreasing, the definitions
# (system tree, process and accelerator groups, event counts, the
# critical_path attribute, clock properties) as documented. The
# critical path of tests/sim/cpath_prog's "basic" (computed by hand there)
# in the attributes: exactly its records carry critical_path 1. Two
# processes: a group each, one host. Then: an
# earlier export is replaced, anything else at DIR refused untouched; a
# database without traces, a damaged trace.db and a libotf2 that cannot be
# loaded are clear errors that leave nothing behind; bad usage.
# Built without OTF2 support, the export must say so in one line; that is
# a failure where the OTF2 3 headers are installed (the build missed them)
# and the rest is skipped only where they are not.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
G=$B/bin/gpuprof
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -x "$B/tests/sim_demo" ] || [ ! -x "$G" ]; then
  fail "$B/tests/sim_demo and $G are built (run make tests first)"
  exit 1
fi
today=$(date -u +%Y-%m-%d) # the day the trace is made
GPUPROF_OUTPUT=$tmp/out GPUPROF_TRACE=1 "$B/tests/sim_demo" >/dev/null 2>&1 ||
  { fail "sim_demo runs"; exit 1; }
"$G" analyze -o "$tmp/db" "$tmp/out" >/dev/null 2>"$tmp/err" ||
  { fail "analyze: $(cat "$tmp/err")"; exit 1; }

"$G" export --otf2 -o "$tmp/x" "$tmp/db" >"$tmp/out.txt" 2>"$tmp/err"
rc=$?
. tests/support/otf2.sh
if [ $rc = 1 ] && grep -q "built without OTF2 support" "$tmp/err"; then
  [ ! -e "$tmp/x" ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
    pass "built without OTF2 support: the export says so in one line, writes nothing" ||
    fail "built without OTF2 support: one line, nothing written"
  if otf2_headers; then
    fail "the OTF2 3 headers are installed, but $B was built without OTF2 support (make rebuilds it)"
  else
    echo "SKIP the OTF2 archive's checks: no OTF2 3 headers here (Debian: libotf2-trace-dev)"
  fi
  [ "$fails" -eq 0 ]
  exit
fi
[ $rc = 0 ] && [ ! -s "$tmp/err" ] && [ -f "$tmp/x/traces.otf2" ] &&
  grep -qx "gpuprof: OTF2 archive written to $tmp/x/traces.otf2" "$tmp/out.txt" &&
  pass "export --otf2 writes DIR/traces.otf2, says where, nothing on stderr" ||
  { fail "export --otf2 (exit $rc): $(cat "$tmp/err")"; exit 1; }
if ! command -v otf2-print >/dev/null 2>&1; then
  fail "otf2-print is installed (Debian: otf2-tools; tools/install-deps.sh check)"
  exit 1
fi
otf2-print -A "$tmp/x/traces.otf2" >"$tmp/print" 2>"$tmp/print.err"
rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/print.err" ] && pass "otf2-print reads it: exit 0, nothing on stderr" ||
  { fail "otf2-print (exit $rc): $(head -5 "$tmp/print.err")"; exit 1; }

# summary.py: per location one line -- type, events, then per region
# "name@enclosing xN" (device work: "name xN/durations") -- and the
# structural checks, from otf2-print's text alone.
cat >"$tmp/summary.py" <<'PY'
import re, sys
locs, groups, nodes, problems, attrs_seen = {}, {}, {}, [], 0
ev_re = re.compile(r'^(ENTER|LEAVE)\s+(\d+)\s+(\d+)\s+Region: "(.*)" <\d+>$')
stack, last, stats = {}, {}, {}
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    m = re.match(r'^LOCATION\s+(\d+)\s+Name: "(.*)" <\d+>, Type: (\w+), '
                 r'# Events: (\d+), Group: "(.*)" <(\d+)>$', line)
    if m:
        locs[m[1]] = dict(name=m[2], type=m[3], events=int(m[4]), group=m[6])
        continue
    m = re.match(r'^LOCATION_GROUP\s+(\d+)\s+Name: "(.*)" <\d+>, Type: (\w+), '
                 r'Parent: "(.*)" <\d+>, Creator: (.*)$', line)
    if m:
        groups[m[1]] = (m[2], m[3], m[4], m[5])
        continue
    m = re.match(r'^SYSTEM_TREE_NODE\s+(\d+)\s+Name: "(.*?)" <\d+>, '
                 r'Class: "(.*?)" <\d+>, Parent: (.*)$', line)
    if m:
        nodes[m[1]] = (m[2], m[3], m[4])
        continue
    if "ADDITIONAL ATTRIBUTES" in line:
        attrs_seen += 1
        continue
    m = ev_re.match(line)
    if not m:
        continue
    ev, loc, ts, name = m[1], m[2], int(m[3]), m[4]
    if ts < last.get(loc, 0):
        problems.append("time goes back on location %s at %d" % (loc, ts))
    last[loc] = ts
    st = stack.setdefault(loc, [])
    s = stats.setdefault(loc, {"n": 0})
    s["n"] += 1
    if ev == "ENTER":
        st.append((name, ts))
        continue
    if not st or st[-1][0] != name:
        problems.append("unbalanced LEAVE %s on location %s" % (name, loc))
        continue
    _, t0 = st.pop()
    key = "%s@%s" % (name, st[-1][0] if st else "-")
    e = s.setdefault(key, [])
    e.append(ts - t0)
for loc, st in stack.items():
    if st:
        problems.append("location %s ends inside %s" % (loc, st[-1][0]))
for lid in sorted(locs, key=int):
    l, s = locs[lid], stats.get(lid, {"n": 0})
    if s["n"] != l["events"]:
        problems.append("location %s: %d events, its definition says %d" %
                        (lid, s["n"], l["events"]))
    parts = []
    for key in sorted(k for k in s if k != "n"):
        d = s[key]
        if l["type"] == "ACCELERATOR_STREAM":
            parts.append("%s x%d/%s" % (key, len(d), ",".join(str(v) for v in sorted(set(d)))))
        else:
            parts.append("%s x%d" % (key, len(d)))
    g = groups[l["group"]]
    print("%s %d [%s %s]: %s" % (l["type"], s["n"], g[1], g[0].split(" ")[0], "; ".join(parts)))
for gid in sorted(groups, key=int):
    print("group %s %s parent %s creator %s" % (groups[gid][1], re.sub(r'\d+', 'N', groups[gid][0]),
          groups[gid][2].split("::")[0], re.sub(r'\d+', 'N', groups[gid][3])))
for nid in sorted(nodes, key=int):
    print("node %s class %s parent %s" % ("HOST" if nodes[nid][1] == "node" else nodes[nid][0],
          nodes[nid][1], nodes[nid][2]))
print("events with attributes: %d" % attrs_seen)
for p in problems:
    print("PROBLEM " + p)
PY
python3 "$tmp/summary.py" "$tmp/print" >"$tmp/sum" 2>&1 || { fail "summary.py"; cat "$tmp/sum"; }
gpu="ACCELERATOR_STREAM 126 [ACCELERATOR GPU]: copy d2h@- x20/2000; copy h2d@- x1/16000; init_a | init_b@- x2/500,700; reduce@- x20/1000; stencil@- x20/3000"
cpu="CPU_THREAD 130 [PROCESS pid]: copy d2h@timesteps x20; copy h2d@setup x1; kernel launch: init_a | init_b@setup x1; kernel launch: reduce@timesteps x20; kernel launch: stencil@timesteps x20; setup@- x1; sync@- x1; timesteps@- x1"
check() { # what count line
  local n
  n=$(grep -cxF -- "$3" "$tmp/sum")
  [ "$n" = "$2" ] && pass "$1" || { fail "$1 (found $n, want $2)"; cat "$tmp/sum"; }
}
check "two GPU stream locations: 63 records each, names and durations exact" 2 "$gpu"
check "two CPU thread locations: 2 regions and 63 API calls each, nested as made" 2 "$cpu"
[ "$(grep -c '^ACCELERATOR_STREAM\|^CPU_THREAD' "$tmp/sum")" = 4 ] &&
  pass "four locations in all" || { fail "four locations in all"; cat "$tmp/sum"; }
grep -q '^PROBLEM' "$tmp/sum" &&
  { fail "events balanced, nested, in time order, as many as defined"; grep '^PROBLEM' "$tmp/sum" | head; } ||
  pass "events balanced, nested, in time order, as many as each location's definition says"
check "a process location group on the host" 1 "group PROCESS pid N parent node creator UNDEFINED"
check "its GPU: an accelerator group it created" 1 "group ACCELERATOR GPU N of pid N parent node creator \"pid N\" <N>"
check "system tree: machine > host" 1 'node HOST class node parent "machine::machine" <0>'
check "system tree: the machine root" 1 "node machine class machine parent UNDEFINED"
check "critical path computed (sim notes its dependencies): all 512 events carry the attribute" 1 "events with attributes: 512"
grep -qE '^ATTRIBUTE +0  Name: "critical_path" <[0-9]+>, .*Type: UINT8$' "$tmp/print" &&
  pass "the critical_path attribute is defined (uint8)" || fail "the critical_path attribute is defined"
# Times are CLOCK_MONOTONIC ns (far below 2^53: readers that compute in
# doubles keep every ns); the date of the first event is today's.
grep -qE "^CLOCK_PROPERTIES +Ticks per Seconds: 1000000000, Global Offset: [0-9]{1,15}, Length: [0-9]+, Date: $today " "$tmp/print" &&
  pass "clock properties: ns ticks, monotonic offset, today's date" ||
  { fail "clock properties"; grep CLOCK "$tmp/print"; }
grep -qE '^REGION .*Name: "stencil" .*Descr\.: "kernel stencil" .*Role: FUNCTION' "$tmp/print" &&
  grep -qE '^REGION .*Name: "setup" .*Role: CODE, Paradigm: USER' "$tmp/print" &&
  grep -qE '^REGION .*Name: "kernel launch: stencil" .*Role: WRAPPER' "$tmp/print" &&
  grep -qE '^REGION .*Name: "copy d2h" .*Role: DATA_TRANSFER' "$tmp/print" &&
  pass "region roles: kernels FUNCTION, user regions CODE/USER, API calls WRAPPER, copies DATA_TRANSFER" ||
  fail "region roles"

# Two processes (sim_demo run twice into one directory): a PROCESS group
# each, each with its own accelerator group, one host.
GPUPROF_OUTPUT=$tmp/two GPUPROF_TRACE=1 "$B/tests/sim_demo" >/dev/null 2>&1 &&
  GPUPROF_OUTPUT=$tmp/two GPUPROF_TRACE=1 "$B/tests/sim_demo" >/dev/null 2>&1 &&
  "$G" analyze -o "$tmp/db2" "$tmp/two" >/dev/null 2>&1 &&
  "$G" export --otf2 -o "$tmp/x2" "$tmp/db2" >/dev/null 2>"$tmp/err" &&
  otf2-print -A "$tmp/x2/traces.otf2" >"$tmp/print2" 2>"$tmp/print.err" && [ ! -s "$tmp/print.err" ] ||
  fail "two processes: export and otf2-print: $(cat "$tmp/err" "$tmp/print.err")"
python3 "$tmp/summary.py" "$tmp/print2" >"$tmp/sum" 2>&1
check "two processes: four GPU stream locations" 4 "$gpu"
check "two processes: four CPU thread locations" 4 "$cpu"
check "two processes: a PROCESS group each" 2 "group PROCESS pid N parent node creator UNDEFINED"
check "two processes: an accelerator group each, created by it" 2 "group ACCELERATOR GPU N of pid N parent node creator \"pid N\" <N>"
check "two processes on one host: one host node" 1 'node HOST class node parent "machine::machine" <0>'
[ "$(grep -c '^PROBLEM' "$tmp/sum")" = 0 ] && pass "two processes: every location's events balanced and in order" ||
  { fail "two processes: events"; grep '^PROBLEM' "$tmp/sum" | head; }
n=$(grep -E '^LOCATION_GROUP +[0-9]+ +Name: "GPU 0 of pid [0-9]+" .*Creator: "pid [0-9]+"' "$tmp/print2" |
    sed -E 's/.*"GPU 0 of pid ([0-9]+)".*Creator: "pid ([0-9]+)".*/\1 \2/' | awk '$1 == $2' | wc -l)
[ "$n" = 2 ] && pass "two processes: each GPU group is its own process's" || fail "each GPU group is its own process's ($n)"

# Replacing: an earlier export is replaced; anything else is refused as is.
"$G" export --otf2 -o "$tmp/x" "$tmp/db" >/dev/null 2>"$tmp/err" &&
  otf2-print "$tmp/x/traces.otf2" >/dev/null 2>&1 &&
  pass "an earlier export at DIR is replaced" || fail "an earlier export is replaced: $(cat "$tmp/err")"
mkdir -p "$tmp/y" && echo keep >"$tmp/y/notes.txt"
"$G" export --otf2 -o "$tmp/y" "$tmp/db" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "y: exists and is not an OTF2 export" "$tmp/err" &&
  [ "$(ls -A "$tmp/y")" = notes.txt ] && [ "$(cat "$tmp/y/notes.txt")" = keep ] &&
  pass "a DIR holding anything else is refused and left as it was" ||
  fail "a DIR holding anything else is refused: $(cat "$tmp/err")"
left() { ls -A "$tmp" | grep -c '\.otf2-'; }
[ "$(left)" = 0 ] && pass "no temporary directory is left" || { fail "temporaries left"; ls -A "$tmp"; }

# A database whose traces were used in part (a torn trace: a killed
# process) exports what it has and says so.
GPUPROF_OUTPUT=$tmp/torn GPUPROF_TRACE=1 "$B/tests/sim_demo" >/dev/null 2>&1
f=$(ls "$tmp"/torn/*.gptrace)
truncate -s -20 "$f"
"$G" analyze -o "$tmp/dbt" "$tmp/torn" >/dev/null 2>&1
"$G" export --otf2 -o "$tmp/xt" "$tmp/dbt" >/dev/null 2>"$tmp/err"
[ $? = 0 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
  grep -q "dbt: its traces were used in part: 1 damaged or empty" "$tmp/err" &&
  otf2-print "$tmp/xt/traces.otf2" >/dev/null 2>&1 &&
  pass "traces used in part: exported, one line says so" ||
  fail "traces used in part: $(cat "$tmp/err")"

# Critical-path membership on cpath_prog basic (tests/sim/cpath_prog.c):
# kA (on stream 0) outlasts kB (stream 1) and region "cpu", so the path is
# kA's launch (until kA starts), kA, then both syncs of stream 0 (the first
# ends when kA does, the second right after); kB, its launch, the sync of
# stream 1 and "cpu" are off it. Per record: its name and critical_path,
# the events on it with their critical_path_ns.
if [ -x "$B/tests/cpath_prog" ]; then
  CPATH_MS=3 GPUPROF_OUTPUT=$tmp/cp GPUPROF_TRACE=1 GPUPROF_BACKENDS=sim "$B/tests/cpath_prog" basic >/dev/null 2>&1 &&
    "$G" analyze -o "$tmp/cpdb" "$tmp/cp" >/dev/null 2>&1 &&
    "$G" export --otf2 -o "$tmp/cpx" "$tmp/cpdb" >/dev/null 2>"$tmp/err" && [ ! -s "$tmp/err" ] ||
    fail "cpath_prog basic: measured, analysed, exported: $(cat "$tmp/err")"
  otf2-print "$tmp/cpx/traces.otf2" 2>/dev/null | awk '
    $1 == "ENTER" || $1 == "LEAVE" { ev = $1; sub(/.*Region: "/, ""); sub(/" <[0-9]+>$/, ""); name = $0; next }
    /ADDITIONAL ATTRIBUTES/ && ev != "" {
      cp = $0; sub(/.*"critical_path" <0>; UINT8; /, "", cp); sub(/\).*/, "", cp)
      ns = "-"; if ($0 ~ /critical_path_ns/) { ns = $0; sub(/.*UINT64; /, "", ns); sub(/\).*/, "", ns) }
      print ev "\t" name "\t" cp "\t" ns; ev = "" }' >"$tmp/cp.ev"
  got=$(awk -F'\t' '$1 == "ENTER" { print $2 "=" $3 }' "$tmp/cp.ev" | sort | tr '\n' ' ')
  want="cpu=0 kA=1 kB=0 kernel launch: kA=1 kernel launch: kB=0 sync=0 sync=1 sync=1 "
  [ "$got" = "$want" ] && pass "cpath basic: exactly kA, its launch and the two syncs of stream 0 carry critical_path 1" ||
    { fail "cpath basic: critical_path membership: got '$got', want '$want'"; cat "$tmp/cp.ev"; }
  got=$(awk -F'\t' '$1 == "ENTER" && $2 == "sync" { printf "%s", $3 }' "$tmp/cp.ev")
  [ "$got" = 011 ] && pass "cpath basic: the sync of stream 1 is off the path, the later two on it" ||
    fail "cpath basic: syncs in order: $got, want 011"
  # Each on-path record's enter and leave carry one critical_path_ns > 0,
  # and kA's is its whole run (20 units of 3 ms: the path waits for all of
  # it).
  bad=$(awk -F'\t' '$3 == 1 && ($4 == "-" || $4 == 0) { n++ } $3 == 0 && $4 != "-" { n++ } END { print n + 0 }' "$tmp/cp.ev")
  ka=$(awk -F'\t' '$2 == "kA" { print $4; exit }' "$tmp/cp.ev")
  kad=$(otf2-print "$tmp/cpx/traces.otf2" 2>/dev/null | awk '/Region: "kA"/ { t[n++] = $3 } END { print t[1] - t[0] }')
  [ "$bad" = 0 ] && [ -n "$ka" ] && [ "$ka" = "$kad" ] &&
    pass "cpath basic: critical_path_ns on exactly the path's events; kA's is its whole run ($ka ns)" ||
    fail "cpath basic: critical_path_ns: $bad events wrong, kA's $ka ns, its run $kad ns"
else
  fail "$B/tests/cpath_prog is built"
fi

# Errors leave nothing behind.
cp -r "$tmp/db" "$tmp/dbx"
printf 'XXXX' | dd of="$tmp/dbx/trace.db" bs=1 seek=100 conv=notrunc 2>/dev/null
"$G" export --otf2 -o "$tmp/z" "$tmp/dbx" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "dbx/trace\.db: checksum mismatch" "$tmp/err" && [ ! -e "$tmp/z" ] &&
  [ "$(left)" = 0 ] && pass "a damaged trace.db: exit 1 naming it, nothing written" ||
  fail "a damaged trace.db: $(cat "$tmp/err")"
rm "$tmp"/out/*.gptrace
"$G" analyze -o "$tmp/db0" "$tmp/out" >/dev/null 2>&1
"$G" export --otf2 -o "$tmp/z" "$tmp/db0" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "the database has no traces (trace.db: analyze measurements made with GPUPROF_TRACE=1)" "$tmp/err" &&
  [ ! -e "$tmp/z" ] && [ "$(left)" = 0 ] &&
  pass "a database without trace.db: exit 1, says how to get one, nothing written" ||
  fail "a database without trace.db: $(cat "$tmp/err")"
GPUPROF_OTF2_LIBRARY=$tmp/no-such-libotf2.so "$G" export --otf2 -o "$tmp/z" "$tmp/db" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "OTF2 export: GPUPROF_OTF2_LIBRARY=.*no-such-libotf2.so" "$tmp/err" &&
  [ ! -e "$tmp/z" ] && [ "$(left)" = 0 ] &&
  pass "libotf2 that cannot be loaded: exit 1, says why, nothing written" ||
  fail "libotf2 that cannot be loaded: $(cat "$tmp/err")"
"$G" export --otf2 "$tmp/db" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "export --otf2 wants -o DIR" "$tmp/err" &&
  pass "export --otf2 without -o: usage error (exit 2)" || fail "export --otf2 without -o: $(cat "$tmp/err")"
[ "$fails" -eq 0 ]
