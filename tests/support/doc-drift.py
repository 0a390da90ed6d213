#!/usr/bin/env python3
"""doc-drift.py ROOT - what the docs name against what the tree has.

tests/scripts/doc-drift.sh runs this on the checkout (and on scratch copies
with planted drift, to see it fail). It reads the docs -- README.md,
doc/*.md, analysis/README.md, examples/**/README.md, python/**/*.md, the
Python package's text (python/gpuprof/*.py: docstrings and the C names it
binds), tests/fakeze/README.md and the comments of include/*.h; never
CHANGELOG.md, which is history -- and checks six rules:

  1 API names: every gpuprof_* / GPUPROF_* name is in the public headers'
    code (include/*.h, comments stripped); GPUPROF_* may also be a variable
    the sources read (rule 2), a version node of a .map file or a macro of
    lib/ or analysis/ or the Makefiles; gpuprof__* (internal) must be in the
    code of lib/ or analysis/. A name followed by *, <, ... or ending in _
    is a prefix: some name must start with it. POLICY_NAMES exempts.
  2 environment: every variable of README.md's "Environment variables"
    table, and every GPUPROF_X=... a doc sets, is read by the sources (a
    "GPUPROF_X" string literal in the C of lib/ or analysis/, or in
    python/gpuprof); every variable the sources read is in that table or
    named in doc/*.md (ENV_UNDOCUMENTED_OK exempts).
  3 paths: every path that starts with a top-level folder of the tree, and
    every one-word backticked path (relative to the doc's own folder, the
    root, lib/ or analysis/), exists; a backticked file name with a source
    extension exists somewhere in the tree (FOREIGN_FILES exempts). Not
    paths: placeholders (<name>, $VAR, ..., NAME), globs, absolute paths,
    build/. A program's path whose source exists (X.c, X.cu) is one.
  4 make targets: every `make T...` in backticks or shell code blocks, and
    the targets listed under README.md's "make targets" (its backticked
    words up to the end of its first sentence), are Makefile targets (the
    Makefile and the files it includes).
  5 benchmarks: doc/BENCH.md's tables (their first column) and the BENCH
    names that tests/bench prints are the same set (<x> in the table
    matches %s in a printf).
  6 the gpuprof command: every `gpuprof SUB` named in backticks or shell
    code blocks is a subcommand of analysis/cli/gpuprof.c (strcmp with
    argv[1], or a {"name", function} entry of its table), and every option after it -- and every backticked span that
    starts with --option -- is an option string of analysis/cli/
    (FOREIGN_OPTIONS and NOT_COMMANDS exempt).

Output: one line per drift, "FAIL FILE:LINE: rule N (topic): NAME: what",
then "PASS rule N (topic): ..." for each rule that found none, and a "#"
line listing the variables documented only in doc/*.md. Exit status 1
when anything drifted.
"""
import glob
import os
import re
import sys

TOPIC = {1: "API names", 2: "environment variables", 3: "paths",
         4: "make targets", 5: "benchmarks", 6: "gpuprof command"}

# Variables the sources read that need no documentation: internal or
# test-only ones. Each entry says why. (Empty today: every variable read is
# documented.)
ENV_UNDOCUMENTED_OK = {
}

# Long options of other programs that the docs put in backticks on their
# own, so they are not gpuprof's (rule 6).
FOREIGN_OPTIONS = {
    "--no-build-isolation": "pip (python/README.md)",
    "--default-stream": "nvcc's --default-stream per-thread (doc/BACKENDS.md)",
}

# Backticked file names (rule 3) that are other projects' (or the user's),
# not the tree's.
FOREIGN_FILES = {
    "cupti_pcsampling.h": "CUPTI's header (doc/BACKENDS.md)",
    "papi.h": "PAPI's header (doc/BACKENDS.md)",
    "ze_api.h": "Level Zero's header (tests/fakeze/README.md)",
    "ze_ddi.h": "Level Zero's header (tests/fakeze/README.md)",
    "zet_ddi.h": "Level Zero's header (tests/fakeze/README.md)",
    "zes_ddi.h": "Level Zero's header (tests/fakeze/README.md)",
}

# Names that no code defines on purpose (rule 1).
POLICY_NAMES = {
    "GPUPROF_EXPERIMENTAL": "doc/ABI.md: the macro a program defines to see "
                            "experimental API; there is none today",
}

# `gpuprof WORD` spans that are text, not commands (rule 6).
NOT_COMMANDS = {
    "gpuprof analysis": "doc/FORMATS.md: the bytes hashed into a database's "
                        "identity (analysis/agg/an_analysis.c)",
}

SRC_EXT = ("c", "h", "cu", "cl", "sh", "md", "py", "mk", "map", "in", "toml")


class Drift:
    def __init__(self, root):
        self.root = root
        self.found = []          # (rule, "FILE:LINE", name, message)
        self.checked = {r: 0 for r in TOPIC}
        self.notes = []          # variables documented in doc/*.md only

    def drift(self, rule, where, name, msg):
        self.found.append((rule, where, name, msg))

    def path(self, rel):
        return os.path.join(self.root, rel)

    def read(self, rel):
        with open(self.path(rel), encoding="utf-8", errors="replace") as f:
            return f.read()


# ----------------------------------------------------------- reading text --

def strip_c(text):
    """C text with comments blanked (newlines kept), and the comments as
    (line, text) pairs. Strings and character literals are kept."""
    code, comments = [], []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            chunk = text[i:j + 1]
            code.append(chunk)
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n - 1 if j < 0 else j + 1
            chunk = text[i:j + 1]
            comments.append((line, chunk))
            code.append(re.sub(r"[^\n]", " ", chunk))
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n - 1 if j < 0 else j - 1
            chunk = text[i:j + 1]
            comments.append((line, chunk))
            code.append(" " * len(chunk))
        else:
            chunk = c
            code.append(c)
        line += chunk.count("\n")
        i += len(chunk)
    return "".join(code), comments


class Seg:
    """A piece of a doc: kind is prose, span (inline code) or code (a line
    of a fenced block, lang its language)."""
    def __init__(self, kind, text, line, lang=""):
        self.kind, self.text, self.line, self.lang = kind, text, line, lang

    def line_of(self, off):
        return self.line + self.text.count("\n", 0, off)


SPAN_RE = re.compile(r"(`+)(.+?)\1", re.S)


def paragraph_segs(lines, first):
    text = "\n".join(lines)
    segs, prose = [], list(text)
    for m in SPAN_RE.finditer(text):
        line = first + text.count("\n", 0, m.start(2))
        segs.append(Seg("span", m.group(2), line))
        for k in range(m.start(), m.end()):
            if prose[k] != "\n":
                prose[k] = " "
    segs.append(Seg("prose", "".join(prose), first))
    return segs


def markdown_segs(text):
    segs, para, first, fence, lang = [], [], 0, None, ""
    for no, line in enumerate(text.split("\n"), 1):
        m = re.match(r"\s*(```+|~~~+)\s*([\w+-]*)", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            else:
                segs.append(Seg("code", line, no, lang))
            continue
        if m:
            segs += paragraph_segs(para, first) if para else []
            para, fence, lang = [], m.group(1), m.group(2).lower()
        elif line.strip() == "":
            segs += paragraph_segs(para, first) if para else []
            para = []
        else:
            if not para:
                first = no
            para.append(line)
    segs += paragraph_segs(para, first) if para else []
    return segs


def doc_files(d):
    pats = ["README.md", "doc/*.md", "analysis/README.md", "examples/**/README.md",
            "python/**/*.md", "tests/fakeze/README.md"]
    out = []
    for pat in pats:
        for p in sorted(glob.glob(d.path(pat), recursive=True)):
            rel = os.path.relpath(p, d.root)
            if os.path.isfile(p) and rel not in out:
                out.append(rel)
    return out


def load_docs(d):
    """{file: [Seg]} for the markdown docs and the header comments."""
    docs = {}
    for rel in doc_files(d):
        docs[rel] = markdown_segs(d.read(rel))
    for h in sorted(glob.glob(d.path("include/*.h"))):
        rel = os.path.relpath(h, d.root)
        _, comments = strip_c(d.read(rel))
        docs[rel] = [seg for line, text in comments
                     for seg in paragraph_segs(text.split("\n"), line)]
    # The Python package's docstrings, comments and the C names it binds.
    for rel in sources(d, ["python/gpuprof"], ("py",)):
        docs[rel] = [Seg("prose", d.read(rel), 1)]
    return docs


def sources(d, dirs, exts):
    for top in dirs:
        for base, subdirs, files in os.walk(d.path(top)):
            subdirs.sort()
            for f in sorted(files):
                if f.rsplit(".", 1)[-1] in exts:
                    yield os.path.relpath(os.path.join(base, f), d.root)


def section(text, title):
    """Lines (numbered from 1) of the "## title" section of a markdown text."""
    out, on = [], False
    for no, line in enumerate(text.split("\n"), 1):
        if line.startswith("## "):
            on = line[3:].strip().lower() == title.lower()
            continue
        if on:
            out.append((no, line))
    return out


def table_first_cells(rows):
    """(line, [names in backticks]) of a markdown table's body rows."""
    out = []
    for no, line in rows:
        if not line.startswith("|") or re.match(r"\|[\s|:-]+\|?\s*$", line):
            continue
        cell = line.split("|")[1]
        names = re.findall(r"`([^`]+)`", cell)
        if names:
            out.append((no, names))
    return out


# ------------------------------------------------------------ the truth --

def c_names(d):
    """Names of the public headers' code; internal gpuprof__ names and
    GPUPROF_ macros of lib/ and analysis/ code, the Makefiles and the .map
    files (version nodes)."""
    hdr, internal, macros = set(), set(), set()
    for h in sorted(glob.glob(d.path("include/*.h"))):
        code, _ = strip_c(d.read(os.path.relpath(h, d.root)))
        hdr |= set(re.findall(r"\b(?:gpuprof|GPUPROF)_\w*", code))
    for rel in sources(d, ["lib", "analysis"], ("c", "h", "cu")):
        code, _ = strip_c(d.read(rel))
        internal |= set(re.findall(r"\bgpuprof__\w+", code))
        macros |= set(re.findall(r"\bGPUPROF_\w+", code))
    maps = glob.glob(d.path("*/*.map")) + glob.glob(d.path("*/*/*.map"))
    for rel in makefiles(d) + [os.path.relpath(p, d.root) for p in maps]:
        macros |= set(re.findall(r"\bGPUPROF_\w+", d.read(rel)))
    return hdr, internal, macros


def env_reads(d):
    """{GPUPROF_X: "FILE:LINE"} of the variables the sources read: a string
    literal "GPUPROF_X" in the C of lib/ or analysis/ (where getenv reads it,
    if it does somewhere), in python/gpuprof, or $GPUPROF_X in the test
    runner (tests/run-tests.sh, .ci/run)."""
    env, by_getenv = {}, set()
    for rel in sources(d, ["lib", "analysis"], ("c", "h", "cu")):
        code, _ = strip_c(d.read(rel))
        for m in re.finditer(r'"(GPUPROF_[A-Z0-9_]+)"', code):
            name = m.group(1)
            got = re.search(r"getenv\(\s*$", code[max(0, m.start() - 20):m.start()])
            if name not in env or (got and name not in by_getenv):
                env[name] = "%s:%d" % (rel, code.count("\n", 0, m.start()) + 1)
                if got:
                    by_getenv.add(name)
    for rel in sources(d, ["python/gpuprof"], ("py",)):
        text = d.read(rel)
        for m in re.finditer(r'["\'](GPUPROF_[A-Z0-9_]+)["\']', text):
            env.setdefault(m.group(1), "%s:%d" % (rel, text.count("\n", 0, m.start()) + 1))
    for rel in ("tests/run-tests.sh", ".ci/run"):   # the test runner's knobs
        if not os.path.exists(d.path(rel)):
            continue
        text = d.read(rel)
        for m in re.finditer(r'\$\{?(GPUPROF_[A-Z0-9_]+)', text):
            env.setdefault(m.group(1), "%s:%d" % (rel, text.count("\n", 0, m.start()) + 1))
    return env


def truth(d):
    t = {}
    t["hdr"], t["internal"], t["macros"] = c_names(d)
    t["env"] = env_reads(d)
    t["targets"] = make_targets(d)
    t["top"] = {e for e in os.listdir(d.root)
                if e not in ("build", ".git") and not e.startswith(".")}
    t["basenames"] = set()
    for base, subdirs, files in os.walk(d.root):
        subdirs[:] = [s for s in subdirs if not (base == d.root and s in ("build", ".git"))]
        t["basenames"] |= set(files)
    t["subcommands"], t["options"] = cli_words(d)
    return t


def makefiles(d):
    out, todo = [], ["Makefile"]
    while todo:
        rel = todo.pop(0)
        if rel in out or not os.path.isfile(d.path(rel)):
            continue
        out.append(rel)
        for m in re.finditer(r"^-?include\s+(.+)$", d.read(rel), re.M):
            todo += [w for w in m.group(1).split() if "$" not in w]
    return out


def make_targets(d):
    targets = set()
    for rel in makefiles(d):
        text = d.read(rel).replace("\\\n", " ")
        for line in text.split("\n"):
            m = re.match(r"([^\s:=#][^:=#]*?)\s*::?(?!=)(.*)$", line)
            if not m or line.startswith("\t"):
                continue
            names = m.group(1).split()
            if names == [".PHONY"]:
                targets |= set(m.group(2).split())
            else:
                targets |= {w for w in names if re.fullmatch(r"[\w.-]+", w)}
    return targets


def cli_words(d):
    main = d.read("analysis/cli/gpuprof.c") if os.path.isfile(d.path("analysis/cli/gpuprof.c")) else ""
    subs = set(re.findall(r'strcmp\(argv\[1\],\s*"([a-z][\w-]*)"\)', main))
    # main's table of commands: {"name", function}
    subs |= set(re.findall(r'\{"([a-z][\w-]*)",\s*[a-z_]+\}', main))
    opts = set()
    for rel in sources(d, ["analysis/cli"], ("c", "h")):
        code, _ = strip_c(d.read(rel))
        opts |= set(re.findall(r'"(--?[A-Za-z][\w-]*)=?"', code))
    return subs, opts


# ----------------------------------------------------------- the rules --

NAME_RE = re.compile(r"(?<!\w)(?:gpuprof|GPUPROF)_\w*")


def env_table(d):
    """(line, name) of the variables of README.md's Environment variables table."""
    rows = table_first_cells(section(d.read("README.md"), "Environment variables"))
    return [(no, n) for no, names in rows for n in names if n.startswith("GPUPROF_")]


def rule1(d, docs, t):
    every = t["hdr"] | t["macros"] | set(t["env"]) | set(POLICY_NAMES)
    tabled = {n for _, n in env_table(d)}
    for rel, segs in docs.items():
        for s in segs:
            for m in NAME_RE.finditer(s.text):
                name, after = m.group(0), s.text[m.end():m.end() + 3]
                if re.match(r"\.(?:%s|so|a)\b" % "|".join(SRC_EXT), after):
                    continue                         # a file name: rule 3
                if name in tabled or re.match(r"=[^=]", after):
                    continue                         # a variable: rule 2
                d.checked[1] += 1
                prefix = name.endswith("_") or after[:1] in ("*", "<", "…") \
                    or after == "..."
                where = "%s:%d" % (rel, s.line_of(m.start()))
                if name.startswith("gpuprof__"):
                    pool, what = t["internal"], "in the code of lib/ or analysis/"
                elif name.startswith("gpuprof_"):
                    pool, what = t["hdr"], "in include/*.h"
                else:
                    pool, what = every, ("in include/*.h, read from the "
                                         "environment, a .map node or a macro "
                                         "of lib/, analysis/ or the Makefiles")
                if prefix:
                    if not any(p.startswith(name) for p in pool):
                        d.drift(1, where, name + "*", "no name with this prefix " + what)
                elif name not in pool:
                    d.drift(1, where, name, "not " + what)


def rule2(d, docs, t):
    tabled = set()
    for no, name in env_table(d):
        tabled.add(name)
        d.checked[2] += 1
        if name not in t["env"]:
            d.drift(2, "README.md:%d" % no, name, "in the Environment variables "
                    "table, but no source reads it (no \"%s\" in lib/, "
                    "analysis/ or python/gpuprof)" % name)
    named = set()
    for rel, segs in docs.items():
        for s in segs:
            if rel.startswith("doc/"):
                named |= set(re.findall(r"\bGPUPROF_\w+", s.text))
            for m in re.finditer(r"\b(GPUPROF_\w+)=(?!=)", s.text):
                d.checked[2] += 1
                if m.group(1) not in t["env"]:
                    d.drift(2, "%s:%d" % (rel, s.line_of(m.start())), m.group(1),
                            "set as a variable here, but no source reads it")
    for name, where in sorted(t["env"].items()):
        d.checked[2] += 1
        if name in tabled or name in ENV_UNDOCUMENTED_OK:
            continue
        if name in named:
            d.notes.append("%s (read at %s)" % (name, where))
        else:
            d.drift(2, where, name, "read here, but documented neither in "
                    "README.md's Environment variables table nor in doc/*.md")


def exists_path(d, t, rel):
    p = d.path(rel)
    if os.path.exists(p):
        return True
    base = p.rstrip("/")
    return any(os.path.isfile(base + e) for e in (".c", ".cu", ".sh", ".py"))


def placeholder(word):
    return re.search(r"[<>*?\[\]{}$]|\.\.\.|…|\bNAME\b|://", word) is not None


def rule3(d, docs, t):
    tops = sorted(e for e in t["top"] if os.path.isdir(d.path(e)))
    bare = re.compile(r"(?<![\w./$~<>@-])((?:%s)/[\w./<>*?{}\[\]$@+-]*)"
                      % "|".join(map(re.escape, tops)))
    for rel, segs in docs.items():
        seen = set()

        def check(line, word, exists, msg="no such file or folder"):
            d.checked[3] += 1
            if not exists and (line, word) not in seen:
                seen.add((line, word))
                d.drift(3, "%s:%d" % (rel, line), word, msg)
        here = os.path.dirname(rel)
        for s in segs:
            for m in bare.finditer(s.text):
                word = m.group(1).rstrip(".,;:)")
                if not placeholder(word):
                    check(s.line_of(m.start()), word, exists_path(d, t, word))
            if s.kind != "span":
                continue
            word = s.text.strip()
            if re.search(r"\s", word) or placeholder(word) or word.startswith(("/", "./", "../", "-", "~")):
                continue
            if "/" in word:
                first = word.split("/")[0]
                if first in t["top"]:
                    if first == word.strip("/"):
                        check(s.line, word, exists_path(d, t, word))
                    continue                         # else the bare pass took it
                for under in (here, "lib", "analysis"):
                    if under and os.path.isdir(d.path(os.path.join(under, first))):
                        check(s.line, word, exists_path(d, t, os.path.join(under, word)))
                        break
            elif re.fullmatch(r"[\w.+-]+\.(?:%s)" % "|".join(SRC_EXT), word) \
                    and word not in FOREIGN_FILES:
                check(s.line, word, word in t["basenames"], "no file of this "
                      "name in the tree; another project's? then FOREIGN_FILES "
                      "in tests/support/doc-drift.py")


MAKE_RE = re.compile(r"(?<![\w/.$(-])make((?:[ \t]+[^\s;|&#)`]+)*)")


def make_words(text):
    """(offset, target) of each target of each `make ...` in text."""
    for m in MAKE_RE.finditer(text):
        for w in re.finditer(r"\S+", m.group(1)):
            word = w.group(0)
            if word.startswith("-") or "=" in word:
                continue                             # options, variables
            if not re.fullmatch(r"[a-z][\w.-]*", word):
                break
            yield m.start(1) + w.start(), word


def rule4(d, docs, t):
    for rel, segs in docs.items():
        for s in segs:
            if s.kind == "prose" or (s.kind == "code" and s.lang not in SHELL):
                continue
            for off, word in make_words(s.text):
                d.checked[4] += 1
                if word not in t["targets"]:
                    d.drift(4, "%s:%d" % (rel, s.line_of(off)), "make " + word,
                            "no such target in the Makefile (or tests/*.mk)")
    # README's list: its backticked words up to the first sentence's end.
    rows = section(d.read("README.md"), "make targets")
    text, depth, end = "\n".join(l for _, l in rows), 0, None
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if c == "." and depth == 0 and text[i + 1:i + 2] in (" ", "\n"):
            end = i
            break
    first = rows[0][0] if rows else 0
    for m in re.finditer(r"`([a-z][\w-]*)`", text[:end]):
        d.checked[4] += 1
        if m.group(1) not in t["targets"]:
            d.drift(4, "README.md:%d" % (first + text.count("\n", 0, m.start())),
                    m.group(1), "listed under \"make targets\" but no such target")


def bench_key(name):
    return re.sub(r"<[^>]*>|%[a-z]", "*", name)


def rule5(d, docs, t):
    doc = d.read("doc/BENCH.md")
    table = {}
    rows = list(enumerate(doc.split("\n"), 1))
    for no, names in table_first_cells(rows):
        for name in names:
            table.setdefault(bench_key(name), (no, name))
    printed = {}
    for rel in sources(d, ["tests/bench"], ("c", "h", "cu", "sh")):
        text = d.read(rel)
        for m in re.finditer(r"[\"']BENCH ([A-Za-z0-9_%]+)", text):
            printed.setdefault(bench_key(m.group(1)),
                               ("%s:%d" % (rel, text.count("\n", 0, m.start()) + 1), m.group(1)))
    for key, (no, name) in sorted(table.items()):
        d.checked[5] += 1
        if key not in printed:
            d.drift(5, "doc/BENCH.md:%d" % no, name, "in the benchmark table, "
                    "but no tests/bench source prints BENCH %s" % name)
    for key, (where, name) in sorted(printed.items()):
        d.checked[5] += 1
        if key not in table:
            d.drift(5, where, name, "printed here, but not in doc/BENCH.md's "
                    "tables")


SHELL = ("", "sh", "bash", "shell", "console", "text")
GPUPROF_RE = re.compile(r"(?<![\w.-])(?:build/bin/)?gpuprof(?=[ \t])")


def invocations(text, in_span):
    """[(offset, token)] after each `gpuprof` in text, up to the end of its
    command (a pipe ends it in code, not in a span: there | is "or")."""
    for m in GPUPROF_RE.finditer(text):
        toks = []
        for w in re.finditer(r"\S+", text[m.end():]):
            tok = w.group(0)
            if tok in ("&&", "||", ";", ">", ">>", "2>&1") or tok.startswith("#") \
                    or (tok == "|" and not in_span) or GPUPROF_RE.fullmatch(tok):
                break
            toks.append((m.end() + w.start(), tok))
            if tok == "--":
                break                                # the program's own
        yield toks


def rule6(d, docs, t):
    subs, opts = t["subcommands"], t["options"]

    def check_opt(where, tok):
        for part in tok.split("|"):
            name = re.match(r"[\[(]*(--?[A-Za-z][\w-]*)", part)
            if not name:
                continue
            name = name.group(1)
            d.checked[6] += 1
            known = name in opts or name in FOREIGN_OPTIONS or (
                not name.startswith("--") and name[:2] in opts)
            if not known:
                d.drift(6, where, name, "not an option of analysis/cli "
                        "(gpuprof.c, an_cli.h, an_run.h); another program's? "
                        "then FOREIGN_OPTIONS in tests/support/doc-drift.py")

    for rel, segs in docs.items():
        for s in segs:
            if s.kind == "prose" or (s.kind == "code" and s.lang not in SHELL):
                continue
            for toks in invocations(s.text, s.kind == "span"):
                for k, (off, tok) in enumerate(toks):
                    where = "%s:%d" % (rel, s.line_of(off))
                    if k == 0 and re.fullmatch(r"[a-z][\w-]*", tok):
                        d.checked[6] += 1
                        if tok not in subs and "gpuprof " + tok not in NOT_COMMANDS:
                            d.drift(6, where, "gpuprof " + tok, "not a "
                                    "subcommand of analysis/cli/gpuprof.c")
                    elif re.match(r"[\[(]*-", tok) and tok != "--":
                        check_opt(where, tok)
            if s.kind == "span" and re.match(r"--[A-Za-z]", s.text):
                check_opt("%s:%d" % (rel, s.line), s.text.split()[0])


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    d = Drift(os.path.abspath(root))
    docs = load_docs(d)
    t = truth(d)
    for rule in (rule1, rule2, rule3, rule4, rule5, rule6):
        rule(d, docs, t)
    for rule, where, name, msg in sorted(d.found, key=lambda f: (f[0], f[1])):
        print("FAIL %s: rule %d (%s): %s: %s" % (where, rule, TOPIC[rule], name, msg))
    bad = {f[0] for f in d.found}
    for rule in TOPIC:
        if rule not in bad:
            print("PASS rule %d (%s): %d names checked in %d files, no drift"
                  % (rule, TOPIC[rule], d.checked[rule], len(docs)))
    if d.notes:
        print("# rule 2: read, and documented in doc/*.md but not in README.md's "
              "table: " + ", ".join(d.notes))
    return 1 if d.found else 0


if __name__ == "__main__":
    sys.exit(main())
