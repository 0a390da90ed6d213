"""Finding and loading the C libraries (ctypes).

libgpuprof (measurement): an already loaded copy first (a program run by
`gpuprof run` has it preloaded: regions must go to the library that
measures). Then, for both libraries, the first of:
  1. GPUPROF_LIBRARY / GPUPROF_ANALYSIS_LIBRARY when set: that file, and
     nothing else;
  2. build/lib of the checkout this package sits in (used in place);
  3. the directories recorded when the package was installed (_where.py,
     written by setup.py: build/lib of the checkout it was installed from,
     and the libdir pkg-config then knew for gpuprof-analysis);
  4. the dynamic loader's search (LD_LIBRARY_PATH, ld.so.cache);
  5. where `make install` puts them although the loader may not look
     there yet: the lib directory beside the `gpuprof` command on PATH,
     sys.prefix/lib, /usr/local/lib.
"""
import ctypes
import os
import shutil
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_BUILD = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build", "lib")


class GpuprofError(RuntimeError):
    """A libgpuprof or libgpuprof-analysis call failed; `status` is its
    gpuprof_status value."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def _recorded_dirs():
    try:
        from ._where import LIBRARY_DIRS
    except ImportError:  # used in place: nothing was recorded
        return []
    return list(LIBRARY_DIRS)


def _installed_dirs():
    dirs = []
    cmd = shutil.which("gpuprof")
    if cmd:
        bindir = os.path.dirname(os.path.realpath(cmd))
        dirs.append(os.path.join(os.path.dirname(bindir), "lib"))
    dirs += [os.path.join(sys.prefix, "lib"), "/usr/local/lib"]
    return dirs


def _candidates(env, soname):
    """The names to try, in the order of the module's docstring."""
    if os.environ.get(env):
        return [os.environ[env]]
    names = [os.path.join(_BUILD, soname)]
    names += [os.path.join(d, soname) for d in _recorded_dirs()]
    names.append(soname)
    names += [os.path.join(d, soname) for d in _installed_dirs()]
    seen = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return seen


def _load(env, soname, already_loaded):
    tried = []
    if already_loaded:
        try:
            return ctypes.CDLL(soname, mode=os.RTLD_NOLOAD | ctypes.RTLD_GLOBAL)
        except OSError:
            pass
    for name in _candidates(env, soname):
        if os.sep in name and not os.path.exists(name):
            tried.append(name)
            continue
        try:
            return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append("%s (%s)" % (name, e))
    raise GpuprofError("cannot load %s; tried %s (set %s to its path)"
                       % (soname, ", ".join(tried), env))


_measure = None
_analysis = None


def measure_lib():
    global _measure
    if _measure is None:
        lib = _load("GPUPROF_LIBRARY", "libgpuprof.so.0", True)
        st = ctypes.c_int
        for name, args in (("gpuprof_init", [ctypes.c_void_p]),
                           ("gpuprof_finalize", []), ("gpuprof_start", []),
                           ("gpuprof_stop", []), ("gpuprof_flush", []),
                           ("gpuprof_region_begin", [ctypes.c_char_p]),
                           ("gpuprof_region_end", [ctypes.c_char_p]),
                           ("gpuprof_output_path", [ctypes.c_char_p,
                                                    ctypes.c_size_t])):
            f = getattr(lib, name)
            f.argtypes, f.restype = args, st
        lib.gpuprof_strerror.argtypes = [ctypes.c_int]
        lib.gpuprof_strerror.restype = ctypes.c_char_p
        _measure = lib
    return _measure


class TraceStream(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("profile", ctypes.c_uint32),
                ("process", ctypes.c_uint32), ("device", ctypes.c_uint32),
                ("stream", ctypes.c_uint32),
                ("realtime_offset_ns", ctypes.c_int64),
                ("records", ctypes.c_uint64)]


class TraceRecord(ctypes.Structure):
    _fields_ = [("start_ns", ctypes.c_uint64), ("end_ns", ctypes.c_uint64),
                ("correlation", ctypes.c_uint64),
                ("context", ctypes.c_uint32)]


def analysis_lib():
    global _analysis
    if _analysis is not None:
        return _analysis
    lib = _load("GPUPROF_ANALYSIS_LIBRARY", "libgpuprof-analysis.so.0", False)
    u32, u64, i32, dbl = (ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32,
                          ctypes.c_double)
    vp, cp, st = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    sigs = {
        "gpuprof_an_last_error": ([], cp),
        "gpuprof_an_db_open": ([cp, ctypes.POINTER(vp)], st),
        "gpuprof_an_db_close": ([vp], None),
        "gpuprof_an_db_context_count": ([vp], u32),
        "gpuprof_an_db_context_parent": ([vp, u32], u32),
        "gpuprof_an_db_context_kind": ([vp, u32], st),
        "gpuprof_an_db_context_name": ([vp, u32], cp),
        "gpuprof_an_db_context_binary": ([vp, u32], cp),
        "gpuprof_an_db_context_flags": ([vp, u32], u32),
        "gpuprof_an_db_metric_count": ([vp], u32),
        "gpuprof_an_db_metric_name": ([vp, u32], cp),
        "gpuprof_an_db_metric_variant": ([vp, u32], st),
        "gpuprof_an_db_metric_unit": ([vp, u32], st),
        "gpuprof_an_db_metric_find": ([vp, cp, st, ctypes.POINTER(u32)], st),
        "gpuprof_an_db_metric_flags": ([vp, u32], u32),
        "gpuprof_an_db_metric_count_metric": ([vp, u32, ctypes.POINTER(u32)],
                                              st),
        "gpuprof_an_db_profile_count": ([vp], u32),
        "gpuprof_an_db_profile_host": ([vp, u32], cp),
        "gpuprof_an_db_profile_pid": ([vp, u32], u32),
        "gpuprof_an_db_profile_rank": ([vp, u32], i32),
        "gpuprof_an_db_profile_tid": ([vp, u32], u64),
        "gpuprof_an_db_profile_thread_name": ([vp, u32], cp),
        "gpuprof_an_db_profile_flags": ([vp, u32], u32),
        "gpuprof_an_db_profile_file": ([vp, u32], cp),
        "gpuprof_an_db_device_count": ([vp], u32),
        "gpuprof_an_db_device_profile": ([vp, u32], u32),
        "gpuprof_an_db_device_api": ([vp, u32], cp),
        "gpuprof_an_db_device_number": ([vp, u32], u32),
        "gpuprof_an_db_device_key": ([vp, u32, u32], cp),
        "gpuprof_an_db_device_attr": ([vp, u32, cp, ctypes.POINTER(u64),
                                       ctypes.POINTER(cp)], st),
        "gpuprof_an_db_value": ([vp, u32, u32, u32], dbl),
        "gpuprof_an_db_stat": ([vp, u32, u32, st], dbl),
        "gpuprof_an_db_derive": ([vp, cp, cp], st),
        "gpuprof_an_db_export_table": ([vp, vp, u32], st),
        "gpuprof_an_db_print_view": ([vp, vp, st, ctypes.POINTER(cp), u32,
                                      dbl, u32, u32], st),
        "gpuprof_an_db_trace_stream_count": ([vp], u32),
        "gpuprof_an_db_trace_stream": ([vp, u32, ctypes.POINTER(TraceStream)],
                                       st),
        "gpuprof_an_db_trace_records": ([vp, u32, u64,
                                         ctypes.POINTER(TraceRecord), u64],
                                        u64),
    }
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = args, res
    _analysis = lib
    return lib


_libc = None


def libc():
    """fopen/fclose, to hand the analysis library a FILE *."""
    global _libc
    if _libc is None:
        c = ctypes.CDLL(None)
        c.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        c.fopen.restype = ctypes.c_void_p
        c.fclose.argtypes = [ctypes.c_void_p]
        c.fclose.restype = ctypes.c_int
        _libc = c
    return _libc
