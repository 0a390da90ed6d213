"""Installs the gpuprof package (pyproject.toml has its metadata) and
records where the C libraries are at that time, so that an installed copy
finds them without GPUPROF_ANALYSIS_LIBRARY (gpuprof/_lib.py): build/lib of
the checkout it is installed from, when built, and the libdir pkg-config
knows for gpuprof-analysis (`make install`), when installed. Written into
the built package as gpuprof/_where.py; a package used in place has none.
"""
import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def library_dirs():
    dirs = []
    build = os.path.realpath(os.path.join(HERE, os.pardir, "build", "lib"))
    if os.path.exists(os.path.join(build, "libgpuprof-analysis.so.0")):
        dirs.append(build)
    try:
        r = subprocess.run(["pkg-config", "--variable=libdir",
                            "gpuprof-analysis"], capture_output=True,
                           text=True, timeout=30)
        libdir = r.stdout.strip()
        if r.returncode == 0 and libdir and libdir not in dirs:
            dirs.append(libdir)
    except (OSError, subprocess.SubprocessError):
        pass  # no pkg-config: nothing to record from it
    return dirs


class BuildWithLibraryDirs(build_py):
    def run(self):
        super().run()
        path = os.path.join(self.build_lib, "gpuprof", "_where.py")
        with open(path, "w") as f:
            f.write('"""Where the C libraries were when this package was '
                    'built (setup.py)."""\nLIBRARY_DIRS = %r\n'
                    % library_dirs())


setup(cmdclass={"build_py": BuildWithLibraryDirs})
