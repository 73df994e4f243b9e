"""Output paths checked before any work: one line if a file or directory cannot be
written, and no parent directory is ever created (as root, `--out /nonexistent/r.html`
would otherwise make `/nonexistent`).  The one exception is the tool's own default
location under the current directory (`jitterscope-runs/`, `jitterscope-doe/`), made
when a run is first written there.

A path must also be a name the run's files can record: not empty (`-o ''`) and valid
UTF-8 (pyarrow, JSON and HTML hold paths as text; a shell can pass any bytes)."""

from __future__ import annotations

import os
from pathlib import Path

from jitterscope.errors import JitterscopeError

DEFAULT_ROOTS = ("jitterscope-runs", "jitterscope-doe")


def check_name(path: str | os.PathLike[str], what: str) -> Path:
    """`path` as a Path, if it is a usable name: not empty, valid UTF-8."""
    if not os.fspath(path).strip():
        raise JitterscopeError(f"{what}: an empty path; name a file or directory")
    p = Path(path)
    try:
        str(p).encode("utf-8")
    except UnicodeEncodeError:
        shown = str(p).encode("utf-8", "backslashreplace").decode()
        raise JitterscopeError(
            f"{what} {shown}: not valid UTF-8; use (or rename it to) a UTF-8 name: the run's files record paths as text"
        ) from None
    return p


def _parent_ok(p: Path, what: str) -> None:
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise JitterscopeError(f"{what} {p}: no such directory {parent} (it is not created for you)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise JitterscopeError(f"{what} {p}: directory {parent} is not writable")


def check_file(path: str | Path, what: str) -> Path:
    """A file that can be (over)written: its directory exists and is writable."""
    p = check_name(path, what)
    if p.exists() and (p.is_dir() or not os.access(p, os.W_OK)):
        raise JitterscopeError(f"{what} {p}: {'is a directory' if p.is_dir() else 'not writable'}")
    _parent_ok(p, what)
    return p


def check_dir(path: str | Path, what: str) -> Path:
    """A directory to write into: it exists and is writable, or its parent does."""
    p = check_name(path, what)
    if p.exists():
        if not p.is_dir():
            raise JitterscopeError(f"{what} {p}: not a directory")
        if not os.access(p, os.W_OK | os.X_OK):
            raise JitterscopeError(f"{what} {p}: directory is not writable")
        return p
    _parent_ok(p, what)
    return p


def make_dir(path: str | Path, what: str) -> Path:
    """`check_dir`, then create the directory itself (never its parents, but for DEFAULT_ROOTS)."""
    p = check_name(path, what)
    if str(p.parent) in DEFAULT_ROOTS:
        try:
            p.parent.mkdir(exist_ok=True)
        except OSError as err:
            raise JitterscopeError(f"{what} {p}: cannot create directory {p.parent} ({err.strerror})") from None
    p = check_dir(p, what)
    try:
        p.mkdir(exist_ok=True)
    except OSError as err:
        raise JitterscopeError(f"{what} {p}: cannot create directory ({err.strerror})") from None
    return p
