"""gpuprof: Python access to libgpuprof (measure a program: init, region,
start/stop/flush) and to libgpuprof-analysis (read an analysis database as
pandas DataFrames: gpuprof.open). Standard library and ctypes only; pandas
for the DataFrames. See python/README.md and doc/ANALYSIS.md."""
from ._lib import GpuprofError
from .analysis import Database, need_pandas, open
from .measure import finalize, flush, init, region, start, stop

__version__ = "0.1.0"
__all__ = ["GpuprofError", "Database", "open", "need_pandas", "init",
           "finalize", "flush", "region", "start", "stop"]
