"""Analysis: an analysis database (made by `gpuprof analyze`) as pandas
DataFrames, through libgpuprof-analysis's C API (include/gpuprof_analysis.h).

    db = gpuprof.open("run-database")
    db.contexts()  context, parent, kind, name, file, line, binary, runtime
    db.values()    context, profile, metric, value (long form, non-zero)
    db.profiles()  profile, host, rank, pid, tid, thread, flags, file
    db.metrics()   metric id, name, variant, unit
    db.devices()   device, profile, api, number, attribute, value
    db.stats()     per (context, metric): count, sum, min, mean, max, std, cov
    db.view(M)     the top-down tree of metric M: sums per context
    db.trace_streams(), db.trace_records(i)

Metric names in values() and stats() follow the exports: "M" is the
exclusive value, "M (inc)" the inclusive one; values are float64 in
values(), view() and stats() alike. The runtime's frames at the
top of every call path (the C library starting the program and its
threads, an interpreter's start above its first Python frame) are left
out, as in `gpuprof report`: a context's parent is then the nearest one
shown, a thread's start is "<thread root>", and trees read "<program root>
-> main". runtime_frames=True gives them back (contexts() then marks them
in its column "runtime"). pandas is needed from gpuprof.open()
on (measurement works without it); an interpreter without it gets an
ImportError that says which interpreter to use instead.
"""
import builtins
import ctypes
import os
import platform
import sys
import tempfile

from ._lib import (GpuprofError, TraceRecord, TraceStream, analysis_lib,
                   libc)

KINDS = ("root", "region", "frame", "gpu op", "kernel", "gpu instruction",
         "function", "inlined", "line", "gpu function", "loop")
UNITS = ("count", "ns", "bytes")
STATS = ("count", "sum", "min", "mean", "max", "std", "cov")
VIEWS = {"top-down": 0, "bottom-up": 1, "flat": 2}
_NO_INCLUSIVE = 2  # GPUPROF_AN_METRIC_NO_INCLUSIVE
_NO_EXCLUSIVE = 4  # GPUPROF_AN_METRIC_NO_EXCLUSIVE
_RUNTIME, _THREAD_ROOT = 1, 2  # GPUPROF_AN_CONTEXT_*
_RUNTIME_FRAMES = 0x100  # GPUPROF_AN_RUNTIME_FRAMES
NONE32 = 0xFFFFFFFF


class PandasMissing(ModuleNotFoundError):
    """pandas cannot be imported by this interpreter (an ImportError, so
    code that catches one keeps working)."""


def need_pandas():
    """The pandas module; an ImportError (PandasMissing) that names this
    interpreter and the fix when it has none. For scripts that use pandas
    beside the package (examples/python/kernels.py)."""
    return _pd()


def _pd():
    try:
        import pandas
    except ImportError as e:
        raise PandasMissing(
            "gpuprof's analysis needs pandas, which this Python (%s, %s) "
            "cannot import (%s). Run it with an interpreter that has pandas, "
            "such as Debian's /usr/bin/python3 (apt-get install "
            "python3-pandas), or from a venv made with '/usr/bin/python3 -m "
            "venv --system-site-packages DIR'. Measurement (gpuprof.init, "
            "gpuprof.region) works without pandas."
            % (sys.executable, platform.python_version(), e),
            name="pandas") from e
    return pandas


def _text(b):
    return b.decode("utf-8", "replace") if b is not None else None


def _fail(what):
    msg = analysis_lib().gpuprof_an_last_error()
    raise GpuprofError("%s: %s" % (what, _text(msg)))


def open(path):  # noqa: A001 (the module's verb, as in the C API)
    """Opens the analysis database in directory `path`."""
    return Database(path)


class Database:
    def __init__(self, path):
        self.path = os.fspath(path)
        self._db = ctypes.c_void_p()
        _pd()  # every table needs it: say so now, not at the first one
        self._lib = analysis_lib()
        if self._lib.gpuprof_an_db_open(self.path.encode(),
                                        ctypes.byref(self._db)) != 0:
            _fail("gpuprof.open(%r)" % self.path)
        # Ids from here on are derived metrics (derive() appends them).
        self._nmeasured = self._lib.gpuprof_an_db_metric_count(self._db)

    # -- life ---------------------------------------------------------------
    def close(self):
        if self._db:
            self._lib.gpuprof_an_db_close(self._db)
            self._db = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _handle(self):
        if not self._db:
            raise GpuprofError("the database is closed")
        return self._db

    # -- tables -------------------------------------------------------------
    def _shown(self, runtime_frames):
        """Per context: (parent as shown or None, name as shown, hidden)."""
        lib, db = self._lib, self._handle()
        rows = []
        for c in range(lib.gpuprof_an_db_context_count(db)):
            parent = lib.gpuprof_an_db_context_parent(db, c)
            flags = lib.gpuprof_an_db_context_flags(db, c)
            name = _text(lib.gpuprof_an_db_context_name(db, c)) or ""
            hidden = bool(flags & _RUNTIME) and not runtime_frames
            if flags & _THREAD_ROOT and not runtime_frames:
                name = "<thread root>"
            # Parents come first: a hidden parent's own shown parent is
            # known by then.
            while not runtime_frames and parent != NONE32 and rows[parent][2]:
                parent = rows[parent][0]
                parent = NONE32 if parent is None else parent
            rows.append((None if parent == NONE32 else parent, name, hidden))
        return rows

    def contexts(self, runtime_frames=False):
        """One row per context: context, parent (<NA> for the root), kind,
        name, for source-line contexts ("file.c:42") file and line, for
        kernels the GPU binary they came from (the kernel's name leaves it
        out: it is a content hash that differs between runs), and whether
        the context is one of the runtime's frames. Those are left out
        unless runtime_frames=True (parents are then the nearest context
        shown, and a thread's start is named "<thread root>")."""
        lib, db = self._lib, self._handle()
        rows = []
        for c, (parent, name, hidden) in enumerate(
                self._shown(runtime_frames)):
            if hidden:
                continue
            kind = lib.gpuprof_an_db_context_kind(db, c)
            file = line = None
            where = name[8:] if kind == 10 and name.startswith("loop at ") \
                else name if kind == 8 else ""
            if ":" in where:
                f, _, l = where.rpartition(":")
                if l.isdigit():
                    file, line = f, int(l)
            rows.append((c, parent,
                         KINDS[kind] if kind < len(KINDS) else "other", name,
                         file, line,
                         _text(lib.gpuprof_an_db_context_binary(db, c)),
                         bool(lib.gpuprof_an_db_context_flags(db, c) &
                              (_RUNTIME | _THREAD_ROOT))))
        pd = _pd()
        df = pd.DataFrame(rows, columns=["context", "parent", "kind", "name",
                                         "file", "line", "binary", "runtime"])
        df["parent"] = df["parent"].astype("Int64")
        df["line"] = df["line"].astype("Int64")
        return df

    def metrics(self, all=False):  # noqa: A002 (the plain word)
        """Database metrics: id, name, variant (inclusive, exclusive), unit
        (count, ns, bytes), flags (1: an odd sum, 2: no meaningful
        inclusive value, as the backend registered it; 4: measured inclusive
        already, region.time.incl, whose "exclusive" values are the measured
        ones and whose inclusive ones are never summed again), count (an odd
        sum's count metric id, else <NA>); measured metrics first, then
        derived ones. Measured metrics without a non-zero value anywhere (the
        gpu.pc.* ones of a run without PC sampling, say) are left out, as
        the exports leave them out, unless all=True."""
        lib, db = self._lib, self._handle()
        rows = []
        for m in range(lib.gpuprof_an_db_metric_count(db)):
            if not all and not self._has_values(m):
                continue
            cm = ctypes.c_uint32()
            has = lib.gpuprof_an_db_metric_count_metric(db, m,
                                                        ctypes.byref(cm)) == 0
            rows.append((m, _text(lib.gpuprof_an_db_metric_name(db, m)),
                         ("inclusive", "exclusive")[
                             lib.gpuprof_an_db_metric_variant(db, m)],
                         UNITS[lib.gpuprof_an_db_metric_unit(db, m)],
                         lib.gpuprof_an_db_metric_flags(db, m),
                         cm.value if has else None))
        df = _pd().DataFrame(rows, columns=["id", "name", "variant", "unit",
                                            "flags", "count"])
        df["count"] = df["count"].astype("Int64")
        return df

    def _has_values(self, m):
        """Whether metric m's name has a non-zero value somewhere: its
        inclusive variant has one at the root then (measured values are
        not negative). Derived metrics count as having values."""
        lib, db = self._lib, self._handle()
        inc = ctypes.c_uint32()
        name = lib.gpuprof_an_db_metric_name(db, m)
        if lib.gpuprof_an_db_metric_find(db, name, 0, ctypes.byref(inc)) != 0:
            return True
        if inc.value >= self._nmeasured:
            return True
        return lib.gpuprof_an_db_stat(db, 0, inc.value, 0) > 0

    def profiles(self):
        """One row per profile (a thread of a process): profile, host,
        rank (-1: unknown), pid, tid, thread, flags, file."""
        lib, db = self._lib, self._handle()
        rows = [(p, _text(lib.gpuprof_an_db_profile_host(db, p)),
                 lib.gpuprof_an_db_profile_rank(db, p),
                 lib.gpuprof_an_db_profile_pid(db, p),
                 lib.gpuprof_an_db_profile_tid(db, p),
                 _text(lib.gpuprof_an_db_profile_thread_name(db, p)),
                 lib.gpuprof_an_db_profile_flags(db, p),
                 _text(lib.gpuprof_an_db_profile_file(db, p)))
                for p in range(lib.gpuprof_an_db_profile_count(db))]
        return _pd().DataFrame(rows, columns=["profile", "host", "rank", "pid",
                                              "tid", "thread", "flags",
                                              "file"])

    def devices(self):
        """One row per attribute of each process's devices (databases of
        format 5): device, profile (its process's first), api, number
        (within the api), attribute ("sm_count", "name", ...), value (an
        int, or a str)."""
        lib, db = self._lib, self._handle()
        rows = []
        for d in range(lib.gpuprof_an_db_device_count(db)):
            head = (d, lib.gpuprof_an_db_device_profile(db, d),
                    _text(lib.gpuprof_an_db_device_api(db, d)),
                    lib.gpuprof_an_db_device_number(db, d))
            i = 0
            while True:
                key = lib.gpuprof_an_db_device_key(db, d, i)
                if key is None:
                    break
                v, t = ctypes.c_uint64(0), ctypes.c_char_p()
                lib.gpuprof_an_db_device_attr(db, d, key, ctypes.byref(v),
                                              ctypes.byref(t))
                rows.append(head + (_text(key),
                                    _text(t.value) if t.value is not None
                                    else v.value))
                i += 1
        return _pd().DataFrame(rows, columns=["device", "profile", "api",
                                              "number", "attribute", "value"])

    def _to_file(self, write):
        """Runs write(FILE *) into a temporary file; returns its path."""
        fd, path = tempfile.mkstemp(prefix="gpuprof-", suffix=".txt")
        os.close(fd)
        f = libc().fopen(path.encode(), b"w")
        if not f:
            os.unlink(path)
            raise GpuprofError("cannot write %s" % path)
        status = write(f)
        libc().fclose(f)
        if status != 0:
            os.unlink(path)
            _fail(self.path)
        return path

    def values(self, runtime_frames=False):
        """Every non-zero value in long form: context, profile, metric
        ("M" exclusive, "M (inc)" inclusive), value (float64, as in view()
        and stats(), whatever the values); derived metrics too; the
        runtime's frames' (which only have inclusive values) with
        runtime_frames=True. Read from `export --table --long`
        (gpuprof_an_db_export_table with GPUPROF_AN_TABLE_LONG)."""
        db = self._handle()
        flags = 1 | (_RUNTIME_FRAMES if runtime_frames else 0)
        path = self._to_file(
            lambda f: self._lib.gpuprof_an_db_export_table(db, f, flags))
        try:
            return _pd().read_csv(path, keep_default_na=False,
                                  dtype={"context": "int64",
                                         "profile": "int64", "metric": str,
                                         "value": "float64"})
        finally:
            os.unlink(path)

    def _metric_id(self, name, inclusive):
        m = ctypes.c_uint32()
        if self._lib.gpuprof_an_db_metric_find(
                self._handle(), name.encode(), 0 if inclusive else 1,
                ctypes.byref(m)) != 0:
            _fail("metric %r" % name)
        return m.value

    def _pairs(self, metrics):
        """The metric names asked for (None: those with values), each
        checked to exist."""
        names = []
        for n in self.metrics(all=metrics is not None)["name"]:
            if n not in names:
                names.append(n)
        if metrics is None:
            return names
        if isinstance(metrics, str):
            metrics = [metrics]
        for n in metrics:
            if n not in names:
                raise GpuprofError("no metric %r in %s" % (n, self.path))
        return list(metrics)

    def stats(self, metrics=None, runtime_frames=False):
        """Statistics over profiles, per context and metric variant where
        some profile has a value: context, metric ("M", "M (inc)"), count,
        sum, min, mean, max, std, cov (gpuprof_an_db_stat: of the stored
        sums, an odd sum's too). A metric without meaningful inclusive
        values (flag 2) has no "M (inc)" rows, one measured inclusive
        (flag 4) no "M" rows; the runtime's frames have rows with
        runtime_frames=True."""
        lib, db = self._lib, self._handle()
        ids = []
        for n in self._pairs(metrics):
            exc = self._metric_id(n, False)
            if not lib.gpuprof_an_db_metric_flags(db, exc) & _NO_EXCLUSIVE:
                ids.append((n, exc))
            inc = self._metric_id(n, True)
            if not lib.gpuprof_an_db_metric_flags(db, inc) & _NO_INCLUSIVE:
                ids.append((n + " (inc)", inc))
        rows = []
        for c in range(lib.gpuprof_an_db_context_count(db)):
            if not runtime_frames and \
                    lib.gpuprof_an_db_context_flags(db, c) & _RUNTIME:
                continue
            for label, m in ids:
                count = lib.gpuprof_an_db_stat(db, c, m, 0)
                if count:
                    rows.append((c, label, int(count)) + tuple(
                        lib.gpuprof_an_db_stat(db, c, m, s)
                        for s in range(1, len(STATS))))
        return _pd().DataFrame(rows, columns=("context", "metric") + STATS)

    def derive(self, name, formula):
        """Adds a derived metric (gpuprof_an_db_derive), e.g.
        db.derive("busy", "gpu.time / whole(gpu.time)")."""
        if self._lib.gpuprof_an_db_derive(self._handle(), name.encode(),
                                          formula.encode()) != 0:
            _fail("derive %s=%s" % (name, formula))

    def _sums(self, m, n):
        """Metric m's sums over profiles at contexts 0..n-1 as the views
        show them: an odd sum (flag 1) as its mean over its count metric
        (NaN where a value has no count)."""
        lib, db = self._lib, self._handle()
        v = [lib.gpuprof_an_db_stat(db, c, m, 1) for c in range(n)]
        cm = ctypes.c_uint32()
        if lib.gpuprof_an_db_metric_count_metric(db, m, ctypes.byref(cm)):
            return v, False
        k = [lib.gpuprof_an_db_stat(db, c, cm.value, 1) for c in range(n)]
        return [a / b if b else (0.0 if a == 0 else float("nan"))
                for a, b in zip(v, k)], True

    def view(self, metric, runtime_frames=False):
        """The top-down tree of `metric`: every context shown (the runtime's
        frames with runtime_frames=True) with its inclusive and exclusive
        sums over profiles ("M (inc)", "M") and its share of the whole, with
        its depth among the contexts shown, in context order (parents
        first). As the text views: an odd sum (flags 1) gives means over
        its count metric and no share (NaN), a metric without meaningful
        inclusive values (flags 2) NaN inclusive values and shares, one
        measured inclusive (flags 4) NaN exclusive values."""
        lib, db = self._lib, self._handle()
        inc, exc = self._metric_id(metric, True), self._metric_id(metric, False)
        n = lib.gpuprof_an_db_context_count(db)
        isum, mean = self._sums(inc, n)
        esum, _ = self._sums(exc, n)
        ctx = self.contexts(runtime_frames)
        depth = {}
        for c, p in zip(ctx["context"], ctx["parent"]):
            depth[c] = 0 if p is _pd().NA else depth[int(p)] + 1
        whole = isum[0] if n else 0
        nan = float("nan")
        if lib.gpuprof_an_db_metric_flags(db, inc) & _NO_INCLUSIVE:
            isum = [nan] * n
            mean = True
        if lib.gpuprof_an_db_metric_flags(db, exc) & _NO_EXCLUSIVE:
            esum = [nan] * n
        ctx.insert(2, "depth", [depth[c] for c in ctx["context"]])
        ctx[metric + " (inc)"] = [isum[c] for c in ctx["context"]]
        ctx[metric] = [esum[c] for c in ctx["context"]]
        ctx["share"] = [nan if mean else isum[c] / whole if whole else 0.0
                        for c in ctx["context"]]
        return ctx.reset_index(drop=True)

    def view_text(self, metrics, view="top-down", threshold=0.01, depth=0,
                  sort_exclusive=False, runtime_frames=False):
        """The text `gpuprof report` prints for these metrics and view."""
        if isinstance(metrics, str):
            metrics = [metrics]
        arr = (ctypes.c_char_p * len(metrics))(*[m.encode() for m in metrics])
        db = self._handle()
        flags = (1 if sort_exclusive else 0) | \
            (_RUNTIME_FRAMES if runtime_frames else 0)
        path = self._to_file(lambda f: self._lib.gpuprof_an_db_print_view(
            db, f, VIEWS[view], arr, len(metrics), threshold, depth, flags))
        try:
            with builtins.open(path) as f:
                return f.read()
        finally:
            os.unlink(path)

    # -- traces (trace.db) ----------------------------------------------------
    def trace_streams(self):
        """The streams of trace.db: stream, kind (regions, ops, gpu, deps:
        a thread's dependency notes, trace format 1.3),
        profile (<NA> for GPU streams), process, device, gpu_stream,
        realtime_offset_ns, records. Empty without traces."""
        lib, db = self._lib, self._handle()
        rows = []
        for i in range(lib.gpuprof_an_db_trace_stream_count(db)):
            s = TraceStream()
            if lib.gpuprof_an_db_trace_stream(db, i, ctypes.byref(s)) != 0:
                _fail("trace stream %d" % i)
            rows.append((i, ("regions", "ops", "gpu", "deps")[s.kind],
                         None if s.profile == NONE32 else s.profile,
                         s.process, s.device, s.stream,
                         s.realtime_offset_ns, s.records))
        df = _pd().DataFrame(rows, columns=[
            "stream", "kind", "profile", "process", "device", "gpu_stream",
            "realtime_offset_ns", "records"])
        df["profile"] = df["profile"].astype("Int64")
        return df

    def trace_records(self, stream):
        """Stream `stream`'s records in time order: start_ns, end_ns,
        correlation, context (<NA> when unknown); CLOCK_MONOTONIC ns of
        the process."""
        lib, db = self._lib, self._handle()
        s = TraceStream()
        if lib.gpuprof_an_db_trace_stream(db, stream, ctypes.byref(s)) != 0:
            _fail("trace stream %d" % stream)
        cols = {"start_ns": [], "end_ns": [], "correlation": [], "context": []}
        buf = (TraceRecord * 4096)()
        first = 0
        while first < s.records:
            got = lib.gpuprof_an_db_trace_records(db, stream, first, buf, 4096)
            if got == 0:
                break
            for r in buf[:got]:
                cols["start_ns"].append(r.start_ns)
                cols["end_ns"].append(r.end_ns)
                cols["correlation"].append(r.correlation)
                cols["context"].append(None if r.context == NONE32
                                       else r.context)
            first += got
        df = _pd().DataFrame(cols)
        df["context"] = df["context"].astype("Int64")
        return df
