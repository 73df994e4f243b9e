"""Build the native helpers (probe, injector) as plain executables.

They are programs, not Python extension modules: the probe must run with its
memory locked and no interpreter beside it.  Only a C compiler is needed.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NATIVE = Path("src/jitterscope/native")
PROGRAMS = {
    # executable name: sources
    "jitterscope-probe": ["probe.c"],
    "jitterscope-inject": ["inject.c"],
    "jitterscope-traceparse": ["traceparse.c"],
    "jitterscope-pipeline": ["pipeline.c"],
    # protect: the duty-cycling controller and its load generators (Syn 'C', pointer chase)
    "jitterscope-protect": ["protect.c", "protect_loop.c", "protect_io.c"],
    "jitterscope-synload": ["synload.c"],
    "jitterscope-chase": ["chase.c"],
    # place: the seed-002 microbenchmarks (cachebuster, spinloop with OBS-F's marker and a pipe ping-pong)
    "jitterscope-cachebuster": ["cachebuster.c"],
    "jitterscope-spinloop": ["spinloop.c"],
}
# Shared objects loaded with ctypes (the cluster bsp work loop runs in the rank's own thread).
SHARED = {
    "libjsbspwork.so": ["bspwork.c"],
    # The LD_PRELOAD interposer of `jitterscope sync` (pthread synchronisation records).
    "libjssync.so": ["interpose.c"],
    # whatif cache: the trace-driven cache simulator (L2, OS cache, overflow sharing, prefetch, pinning)
    "libjscachesim.so": ["cachesim.c"],
    # whatif dvfs: the replay's per-subframe loop (controller, transitions, jitter count)
    "libjsdvfs.so": ["dvfs.c"],
}


class BuildNative(build_ext):
    def run(self) -> None:
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc:
            sys.exit("jitterscope: a C compiler (cc) is needed to build the probe")
        if self.inplace or getattr(self, "editable_mode", False):
            outdir = NATIVE / "bin"
        else:
            outdir = Path(self.build_lib) / "jitterscope" / "native" / "bin"
        outdir.mkdir(parents=True, exist_ok=True)
        for name, sources in PROGRAMS.items():
            srcs = [str(NATIVE / s) for s in sources if (NATIVE / s).exists()]
            if not srcs:
                continue
            cmd = [
                cc,
                "-O2",
                "-g",
                "-Wall",
                "-Wextra",
                "-std=gnu11",
                "-pthread",
                "-I",
                str(NATIVE),
                "-o",
                str(outdir / name),
                *srcs,
                "-lm",
            ]
            print(" ".join(cmd))
            subprocess.check_call(cmd)
        for name, sources in SHARED.items():
            srcs = [str(NATIVE / s) for s in sources if (NATIVE / s).exists()]
            if not srcs:
                continue
            cmd = [
                cc,
                "-O2",
                "-g",
                "-Wall",
                "-Wextra",
                "-std=gnu11",
                "-shared",
                "-fPIC",
                "-I",
                str(NATIVE),
                "-o",
                str(outdir / name),
                *srcs,
                "-lm",
            ]
            print(" ".join(cmd))
            subprocess.check_call(cmd)

    def get_outputs(self):  # no Python extension modules
        return []


setup(
    # A placeholder extension makes setuptools call build_ext (and mark the
    # wheel as platform-specific); BuildNative compiles the real programs.
    ext_modules=[Extension("jitterscope._native_placeholder", sources=[])],
    cmdclass={"build_ext": BuildNative},
)
