#!/usr/bin/env bash
# The docs say what the tree has. tests/support/doc-drift.py reads README.md,
# doc/*.md, analysis/README.md, examples/**/README.md, python/**/*.md,
# tests/fakeze/README.md and the comments of include/*.h (not CHANGELOG.md:
# history) and checks six rules (its opening comment says how each is read):
#   1 every gpuprof_* / gpuprof_an_* / gpuprof_be_* / GPUPROF_* name is in
#     the public headers (gpuprof__* internal names: in lib/ or analysis/);
#   2 every variable of README.md's "Environment variables" table (and every
#     GPUPROF_X=... in the docs) is read by the sources, and every GPUPROF_*
#     variable the sources read is in that table or in doc/*.md;
#   3 every repository path named exists;
#   4 every `make TARGET` named is a Makefile target;
#   5 doc/BENCH.md's tables and the BENCH names tests/bench prints are the
#     same set;
#   6 every `gpuprof SUBCOMMAND` and option named is in analysis/cli.
# One FAIL line per drift: "FAIL FILE:LINE: rule N (topic): NAME: what".
# Then the same checks run on a scratch copy of the tree with drift planted
# for every rule (each must be reported at its file and line) and with
# things that are not drift (placeholders, build/, globs: nothing more may
# be reported), so the check is seen to fail. Prints PASS/FAIL lines.
# shellcheck disable=SC2016 # the backticks below are Markdown's, not the shell's
set -u
cd "$(dirname "$0")/../.." || exit 1
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
checker=tests/support/doc-drift.py

if ! command -v python3 >/dev/null 2>&1; then
  fail "python3 is needed (tools/install-deps.sh check)"
  exit 1
fi

# The checkout.
out=$(python3 "$checker" .)
rc=$?
echo "$out"
fails=$((fails + $(grep -c '^FAIL ' <<<"$out")))
if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' <<<"$out"; then
  fail "$checker exited $rc without a finding"
fi

# A scratch copy (build/ and .git left out: neither is documentation).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree"
tar -C . --exclude=./build --exclude=./.git -cf - . | tar -C "$tmp/tree" -xf -
t=$tmp/tree
findings() { python3 "$checker" "$t" | grep '^FAIL ' | sort; }
base=$(findings)

# add FILE TEXT: appends TEXT as the last line of FILE; prints that line's number.
add() { printf '%s\n' "$2" >>"$t/$1"; wc -l <"$t/$1"; }
# line_in FILE SECTION REGEX: the number of the first line matching REGEX in
# the "## SECTION" of FILE (0: none).
line_in() {
  awk -v s="## $2" -v re="$3" '/^## / { on = ($0 == s); next }
    on && $0 ~ re { print NR; found = 1; exit } END { if (!found) print 0 }' "$t/$1"
}
# after FILE SECTION REGEX TEXT: inserts TEXT after that line; prints its number.
after() {
  local n
  n=$(line_in "$1" "$2" "$3")
  [ "$n" -gt 0 ] || { echo 0; return; }
  sed -i "${n}a\\
$4" "$t/$1"
  echo $((n + 1))
}

# Drift planted for every rule: "FILE:LINE|RULE|NAME" must be reported.
expect=()
n=$(add doc/CORE.md 'Call `gpuprof_region_vanished()` first.')
expect+=("doc/CORE.md:$n|1|gpuprof_region_vanished")
n=$(add include/gpuprof.h '/* gpuprof_flush_all() writes every profile. */')
expect+=("include/gpuprof.h:$n|1|gpuprof_flush_all")
n=$(grep -n -m 1 '^ \* ' "$t/include/gpuprof_analysis.h" | cut -d: -f1)
sed -i "${n}a\\
 * gpuprof_an_vanished() was here." "$t/include/gpuprof_analysis.h"
n=$((n + 1))
expect+=("include/gpuprof_analysis.h:$n|1|gpuprof_an_vanished")
n=$(add doc/ANALYSIS.md 'The merge is `gpuprof__an_gone_helper`.')
expect+=("doc/ANALYSIS.md:$n|1|gpuprof__an_gone_helper")
n=$(add doc/ABI.md 'Pinned: `GPUPROF_OP_TELEPORT`.')
expect+=("doc/ABI.md:$n|1|GPUPROF_OP_TELEPORT")
n=$(after README.md 'Environment variables' '^\| `GPUPROF_' '| `GPUPROF_NOT_READ` | nothing reads it | `0` |')
expect+=("README.md:$n|2|GPUPROF_NOT_READ")
n=$(add lib/core/config.c 'static const char *knob = "GPUPROF_UNDOCUMENTED_KNOB";')
expect+=("lib/core/config.c:$n|2|GPUPROF_UNDOCUMENTED_KNOB")
n=$(add doc/CORE.md 'Run with `GPUPROF_GONE_KNOB=1`.')
expect+=("doc/CORE.md:$n|2|GPUPROF_GONE_KNOB")
n=$(add doc/ANALYSIS.md 'See `tests/scripts/no-such.sh`.')
expect+=("doc/ANALYSIS.md:$n|3|tests/scripts/no-such.sh")
n=$(add analysis/README.md '| `views/` | `views/an_gone.c` |')
expect+=("analysis/README.md:$n|3|views/an_gone.c")
n=$(add doc/BACKENDS.md 'as lib/backends/nosuch/x.c does.')
expect+=("doc/BACKENDS.md:$n|3|lib/backends/nosuch/x.c")
n=$(add doc/FORMATS.md 'The reader is `an_vanished.c`.')
expect+=("doc/FORMATS.md:$n|3|an_vanished.c")
n=$(add doc/CORE.md 'Then `make no-such-target`.')
expect+=("doc/CORE.md:$n|4|make no-such-target")
n=$(line_in README.md 'make targets' '^`')
sed -i "${n}s/^/\`reformat\`, /" "$t/README.md"
expect+=("README.md:$n|4|reformat")
n=$(after doc/BENCH.md 'Measurement' '^\| `' '| `no_such_bench_ns` | ns | lower | nothing prints it | | 1 |')
expect+=("doc/BENCH.md:$n|5|no_such_bench_ns")
n=$(add tests/bench/bench_region.c 'static const char *fig = "BENCH unlisted_figure_ns %f ns\n";')
expect+=("tests/bench/bench_region.c:$n|5|unlisted_figure_ns")
n=$(add doc/ANALYSIS.md 'Then `gpuprof frobnicate DB`.')
expect+=("doc/ANALYSIS.md:$n|6|gpuprof frobnicate")
n=$(add doc/ANALYSIS.md 'Or `gpuprof report --no-such-flag DB`.')
expect+=("doc/ANALYSIS.md:$n|6|--no-such-flag")
n=$(add README.md '`--vanished-option` does it.')
expect+=("README.md:$n|6|--vanished-option")
planted=$(findings)
for e in "${expect[@]}"; do
  IFS='|' read -r where rule name <<<"$e"
  if grep -qF -- "FAIL $where: rule $rule (" <<<"$planted" &&
     grep -F -- "FAIL $where: rule $rule (" <<<"$planted" | grep -qF -- "): $name"; then
    pass "detected: rule $rule drift planted at $where ($name)"
  else
    fail "not detected: rule $rule drift planted at $where ($name)"
  fi
done
extra=$(comm -13 <(echo "$base") <(echo "$planted") |
  grep -vF -f <(for e in "${expect[@]}"; do echo "FAIL ${e%%|*}: "; done))
if [ -z "$extra" ]; then
  pass "the planted drift is all that is reported beyond the copy's own"
else
  fail "reported beyond the planted drift:"
  printf '%s\n' "$extra" | sed 's/^/    /'
fi

# What is not drift: placeholders, globs, build/ and $OUT paths, prefixes,
# prose that says "make", a pipe after gpuprof in a shell block, foreign
# options on the allow-list.
rm -rf "$t" && mkdir -p "$t"
tar -C . --exclude=./build --exclude=./.git -cf - . | tar -C "$t" -xf -
cat >>"$t/doc/CORE.md" <<'EOF'

Not drift: `lib/backends/<name>/`, `build/nothing/here`, `$OUT/x.json`,
`tests/unit/check_*.c`, `gpuprof_be_detect_*`, `gpuprof__backend_<name>_register`,
`GPUPROF_TRACE=1`, `--no-build-isolation`, `make -j2 all tests`, make sure of it,
tests/sim/sim_demo (a program built from its source), `gpuprof_analysis.h`,
`examples/opencl/jacobi`, `GPUPROF_0.1`, `include/gpuprof*.h`.

```sh
gpuprof report --metric gpu.time DB | head -n 5 --lines
make check V=1
```
EOF
clean=$(findings)
if [ "$clean" = "$base" ]; then
  pass "placeholders, globs, build/ paths and foreign options are not reported"
else
  fail "reported what is not drift:"
  comm -13 <(echo "$base") <(echo "$clean") | sed 's/^/    /'
fi
[ "$fails" -eq 0 ]
