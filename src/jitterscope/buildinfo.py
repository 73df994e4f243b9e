"""Which commit this jitterscope was built from, for `jitterscope --version` and bug reports.

A wheel or sdist carries it in `jitterscope/_build_info.py`, written by setup.py when it
builds; a source checkout (the editable install of `make install`) asks git; anything
else says "unknown".

setup.py loads this file by path while it builds, before the package is importable: it
imports nothing of jitterscope at module level.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

UNKNOWN = "unknown"
BUILD_INFO = "_build_info.py"
# The checkout an editable install runs from: src/jitterscope/ is two levels below it.
_CHECKOUT = Path(__file__).resolve().parents[2]


def _git(tree: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(tree), *args], capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()


def git_commit(tree: Path) -> str | None:
    """HEAD of the git checkout whose top directory is `tree`, with "+modified" when
    tracked files differ from it; None when `tree` is not such a checkout or git cannot
    tell (not installed, or the checkout belongs to another user)."""
    try:
        if Path(_git(tree, "rev-parse", "--show-toplevel")).resolve() != tree.resolve():
            return None  # a directory inside some other repository
        commit = _git(tree, "rev-parse", "HEAD")
        modified = _git(tree, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+modified" if modified else "")


def write_build_info(package_dir: Path, commit: str) -> None:
    """Record `commit` in the package being built (setup.py calls this)."""
    path = package_dir / BUILD_INFO
    # An sdist's tree hard-links the checkout's files: replace the link, never write through it.
    path.unlink(missing_ok=True)
    path.write_text(f'"""Written by setup.py when this package was built."""\n\nCOMMIT = "{commit}"\n')


def build_commit() -> str:
    """The commit this package was built from (see the module docstring)."""
    try:
        from jitterscope._build_info import COMMIT  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return git_commit(_CHECKOUT) or UNKNOWN
    return str(COMMIT)


def version_text() -> str:
    from jitterscope import __version__

    return f"jitterscope {__version__} (commit {build_commit()})"
