"""Measurement: libgpuprof through ctypes.

init() takes the GPUPROF_* settings as keywords (output="DIR" is
GPUPROF_OUTPUT, trace=True is GPUPROF_TRACE=1, ...: README "Environment"),
puts them in the environment and calls gpuprof_init(NULL), so the library
reads them exactly as it reads a program's environment. region() is a
context manager and a decorator over gpuprof_region_begin/_end.
"""
import ctypes
import functools
import os

from ._lib import GpuprofError, measure_lib

E_EXISTS = 10

_VARS = {"output": "GPUPROF_OUTPUT", "backends": "GPUPROF_BACKENDS",
         "trace": "GPUPROF_TRACE", "start_paused": "GPUPROF_START_PAUSED",
         "flush_period_ms": "GPUPROF_FLUSH_PERIOD_MS",
         "log": "GPUPROF_LOG", "rank": "GPUPROF_RANK",
         "signals": "GPUPROF_SIGNALS", "clock": "GPUPROF_CLOCK",
         "pc_sampling": "GPUPROF_CUPTI_PC_SAMPLING"}


def _check(status, what):
    if status != 0:
        lib = measure_lib()
        raise GpuprofError("%s: %s" % (what, lib.gpuprof_strerror(status)
                                       .decode()), status)


def init(**settings):
    """Starts measuring this process. Keywords: output, backends, trace,
    start_paused, flush_period_ms, log, rank, signals, clock, pc_sampling
    (booleans become 1/0). Returns True when this call started the
    measurement, False when the process was already being measured: under
    `gpuprof run` this init joins that measurement (gpuprof_init in
    gpuprof.h), so regions go to the run's profile, start_paused applies,
    and settings that cannot apply any more are logged (GPUPROF_LOG=warn
    shows them)."""
    for key, value in settings.items():
        if key not in _VARS:
            raise TypeError("init() got an unknown setting %r (one of %s)"
                            % (key, ", ".join(sorted(_VARS))))
        if isinstance(value, bool):
            value = int(value)
        os.environ[_VARS[key]] = str(value)
    lib = measure_lib()
    path = ctypes.create_string_buffer(4096)
    measuring = lib.gpuprof_output_path(path, len(path)) == 0
    status = lib.gpuprof_init(None)
    if status == E_EXISTS:
        return False
    _check(status, "gpuprof_init")
    return not measuring


def finalize():
    """Writes the final profile (also done at exit)."""
    _check(measure_lib().gpuprof_finalize(), "gpuprof_finalize")


def start():
    _check(measure_lib().gpuprof_start(), "gpuprof_start")


def stop():
    _check(measure_lib().gpuprof_stop(), "gpuprof_stop")


def flush():
    """Writes a complete profile of what was measured so far."""
    _check(measure_lib().gpuprof_flush(), "gpuprof_flush")


class region:
    """A named region: `with gpuprof.region("solve"): ...` or, as a
    decorator, `@gpuprof.region("step")` (`@gpuprof.region()` names it after
    the function). Outside init..finalize it records nothing, as in C; an
    unbalanced end raises GpuprofError."""

    def __init__(self, name=None):
        self.name = name
        self._bname = name.encode() if name is not None else None

    def __enter__(self):
        st = measure_lib().gpuprof_region_begin(self._bname)
        if st not in (0, 2):  # E_STATE: not measuring, nothing recorded
            _check(st, "gpuprof_region_begin(%r)" % self.name)
        return self

    def __exit__(self, *exc):
        st = measure_lib().gpuprof_region_end(self._bname)
        if st not in (0, 2):
            _check(st, "gpuprof_region_end(%r)" % self.name)
        return False

    def __call__(self, fn):
        r = self if self.name is not None else region(fn.__qualname__)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with r:
                return fn(*args, **kwargs)
        return wrapper
