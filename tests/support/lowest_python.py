"""Check jitterscope on the lowest Python that pyproject.toml's requires-python allows
(`make py-lowest`, part of `make test`).

Finds that interpreter (on PATH, under pyenv, or installed with `uv python
install` from PyPI's uv), keeps a venv for it in .venv-pyX.Y with the package's
dependencies, installed by the main venv's uv (pip, where there is none, took 78 CPU-seconds against
26, beside the tests of `make test`) (the package itself runs from src/, so the native programs built
for the main venv are shared and never rebuilt here), then compiles every
source file (syntax), imports every module, builds every command's --help and
runs the quick unit tests of the stdlib-heavy parts (UNIT_TESTS).  When no such interpreter
can be had it says why and exits 0: the check is skipped, not failed.
"""

from __future__ import annotations

import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10 (the main venv may be the lowest version itself): pip's copy of tomli
    from pip._vendor import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
# The unit tests run on the lowest Python too: quick ones over the stdlib-heavy parts (parsing,
# configuration, journal, records, import graph).  All of them take minutes; these take seconds.
UNIT_TESTS = [
    "test_units.py",
    "test_config.py",
    "test_journal.py",
    "test_probe_format.py",
    "test_tsc.py",
    "test_ptts_model.py",
    "test_summary.py",
]


def lowest_version() -> str:
    spec = tomllib.loads(PYPROJECT.read_text())["project"]["requires-python"]
    m = re.search(r">=\s*(\d+\.\d+)", spec)
    if not m:
        sys.exit(f"requires-python {spec!r} names no lowest version (>=X.Y)")
    return m.group(1)


def _works(exe: str | Path, version: str) -> bool:
    try:
        out = subprocess.run(
            [str(exe), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except OSError:
        return False
    return out.returncode == 0 and out.stdout.strip() == version


def find_interpreter(version: str) -> tuple[Path | None, str]:
    """The interpreter, or None and why not."""
    candidates = [shutil.which(f"python{version}")]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted(str(p) for p in pyenv_root.glob(f"versions/{version}.*/bin/python{version}"))
    for c in candidates:
        if c and _works(c, version):
            return Path(c), ""
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not Path(uv).exists():
        got = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "uv"], capture_output=True, text=True)
        if got.returncode != 0:
            return None, f"no python{version} here and uv could not be installed from PyPI"
    inst = subprocess.run([uv, "python", "install", version], capture_output=True, text=True)
    if inst.returncode != 0:
        return None, f"no python{version} here and `uv python install {version}` failed: " + (
            inst.stderr.strip().splitlines() or ["?"]
        )[-1]
    found = subprocess.run([uv, "python", "find", version], capture_output=True, text=True)
    exe = found.stdout.strip()
    return (
        (Path(exe), "")
        if found.returncode == 0 and _works(exe, version)
        else (None, f"uv installed Python {version} but it does not run")
    )


def ensure_venv(python: Path, version: str) -> Path:
    venv = ROOT / f".venv-py{version}"
    stamp = venv / ".deps"
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"] + ["pytest>=7", "pytest-timeout"]
    want = "\n".join(deps)
    if stamp.exists() and stamp.read_text() == want:
        return venv
    uv = Path(sys.executable).parent / "uv"  # the main venv's (Makefile): 4 times less CPU than pip here
    if uv.exists():
        subprocess.run([str(uv), "venv", "-q", "--clear", "--python", str(python), str(venv)], check=True)
        subprocess.run([str(uv), "pip", "install", "-q", "--python", str(venv / "bin/python"), *deps], check=True)
    else:
        subprocess.run([str(python), "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
        subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", *deps], check=True)
    stamp.write_text(want)
    return venv


def modules() -> list[str]:
    sys.path.insert(0, str(ROOT / "src"))
    import jitterscope

    return ["jitterscope"] + [m.name for m in pkgutil.walk_packages(jitterscope.__path__, "jitterscope.")]


def main() -> int:
    version = lowest_version()
    python, why = find_interpreter(version)
    if python is None:
        print(f"note: skipping the Python {version} check: {why}")
        return 0
    try:
        venv = ensure_venv(python, version)
    except subprocess.CalledProcessError as err:
        print(f"note: skipping the Python {version} check: installing the dependencies failed ({err})")
        return 0
    py = str(venv / "bin/python")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "PYTHONDONTWRITEBYTECODE": "1"}
    print(
        f"Python {version} ({python}): compile every file, import every module, build every --help, "
        f"{len(UNIT_TESTS)} unit test files",
        flush=True,
    )
    steps = [
        [
            py,
            "-c",
            "import sys\nfrom pathlib import Path\nfor d in sys.argv[1:]:\n"
            "    for f in Path(d).rglob('*.py'): compile(f.read_bytes(), str(f), 'exec')",
            str(ROOT / "src"),
            str(ROOT / "tests"),
            str(ROOT / "benchmarks"),
        ],
        [
            py,
            "-c",
            "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)",
            *[m for m in modules() if m != "jitterscope.__main__"],
        ],
        [
            py,
            "-c",
            "import contextlib, io, sys\nfrom jitterscope.cli import build_parser\np = build_parser()\n"
            "for c in p._subparsers._group_actions[0].choices.values():\n"
            "    with contextlib.redirect_stdout(io.StringIO()): c.format_help()",
        ],
        [py, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *[str(ROOT / "tests/unit" / t) for t in UNIT_TESTS]],
    ]
    for cmd in steps:
        if subprocess.run(cmd, cwd=ROOT, env=env).returncode != 0:
            print(f"Python {version}: failed: {' '.join(cmd[:3])} ...", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
