"""Build the native helpers (probe, injector) as plain executables.

They are programs, not Python extension modules: the probe must run with its
memory locked and no interpreter beside it.  Only a C compiler is needed.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
NATIVE = Path("src/jitterscope/native")
PROGRAMS = {
    # executable name: sources
    "jitterscope-probe": ["probe.c"],
    "jitterscope-inject": ["inject.c"],
    "jitterscope-traceparse": ["traceparse.c"],
    # the trace capture: every traced CPU's ring buffer spliced, whole pages, into trace/cpuN.raw
    "jitterscope-tracereader": ["tracereader.c"],
    "jitterscope-pipeline": ["pipeline.c"],
    # protect: the duty-cycling controller and its load generators (Syn 'C', pointer chase)
    "jitterscope-protect": ["protect.c", "protect_loop.c", "protect_io.c"],
    "jitterscope-synload": ["synload.c"],
    "jitterscope-chase": ["chase.c"],
    # place: the seed-002 microbenchmarks (cachebuster, spinloop with OBS-F's marker and a pipe ping-pong)
    "jitterscope-cachebuster": ["cachebuster.c"],
    "jitterscope-spinloop": ["spinloop.c"],
    # the session lifecycle's watchdog: undoes a killed session's changes at once (session.py)
    "jitterscope-watchdog": ["watchdog.c"],
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


def _compile(cc: str, out: Path, sources: list[str], shared: bool) -> list[str]:
    kind = ["-shared", "-fPIC"] if shared else ["-pthread"]
    # -Werror: our sources build clean; -Wformat=2 also refuses a format string that is not a literal
    flags = ["-O2", "-g", "-Wall", "-Wextra", "-Wformat=2", "-Werror", "-std=gnu11", *kind, "-I", str(NATIVE)]
    return [cc, *flags, "-o", str(out), *sources, "-lm"]


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
        cmds = []
        for programs, shared in ((PROGRAMS, False), (SHARED, True)):
            for name, sources in programs.items():
                srcs = [str(NATIVE / s) for s in sources if (NATIVE / s).exists()]
                if srcs:
                    cmds.append(_compile(cc, outdir / name, srcs, shared))
        for cmd in cmds:
            print(" ".join(cmd))
        # One compiler per CPU: the programs are independent, and installing waits for them.
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            list(pool.map(subprocess.check_call, cmds))

    def get_outputs(self):  # no Python extension modules
        return []


def _buildinfo():
    """src/jitterscope/buildinfo.py, loaded by path: the package itself is not importable while it builds."""
    spec = importlib.util.spec_from_file_location("_jitterscope_buildinfo", HERE / "src/jitterscope/buildinfo.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPy(build_py):
    """Records the git commit in the built package (jitterscope/_build_info.py) for `jitterscope --version`.

    Built from an sdist (no git), the _build_info.py the sdist carries is copied as it is."""

    def run(self) -> None:
        super().run()
        if not self.editable_mode:  # an editable checkout asks git when asked for its version
            info = _buildinfo()
            commit = info.git_commit(HERE)
            if commit:
                info.write_build_info(Path(self.build_lib) / "jitterscope", commit)


class Sdist(sdist):
    """Carries the git commit into the sdist, so a wheel built from it (without git) still knows it."""

    def make_release_tree(self, base_dir, files) -> None:
        super().make_release_tree(base_dir, files)
        info = _buildinfo()
        commit = info.git_commit(HERE)
        if commit:
            info.write_build_info(Path(base_dir) / "src/jitterscope", commit)


class PlatformWheel(bdist_wheel):
    """Tagged py3-none-<platform>: the wheel holds native programs and ctypes libraries, no extension
    module, so any Python 3 on this platform runs it, but only on this platform."""

    def get_tag(self):
        _python, _abi, plat = super().get_tag()
        return "py3", "none", plat


setup(
    # A placeholder extension makes setuptools call build_ext (and mark the
    # wheel as platform-specific); BuildNative compiles the real programs.
    ext_modules=[Extension("jitterscope._native_placeholder", sources=[])],
    cmdclass={"build_ext": BuildNative, "build_py": BuildPy, "sdist": Sdist, "bdist_wheel": PlatformWheel},
)
