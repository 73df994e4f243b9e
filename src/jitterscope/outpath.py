"""Output paths checked before any work: one line if a file or directory cannot be
written, and no parent directory is ever created (as root, `--out /nonexistent/r.html`
would otherwise make `/nonexistent`)."""

from __future__ import annotations

import os
from pathlib import Path

from jitterscope.errors import JitterscopeError


def _parent_ok(p: Path, what: str) -> None:
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise JitterscopeError(f"{what} {p}: no such directory {parent} (it is not created for you)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise JitterscopeError(f"{what} {p}: directory {parent} is not writable")


def check_file(path: str | Path, what: str) -> Path:
    """A file that can be (over)written: its directory exists and is writable."""
    p = Path(path)
    if p.exists() and (p.is_dir() or not os.access(p, os.W_OK)):
        raise JitterscopeError(f"{what} {p}: {'is a directory' if p.is_dir() else 'not writable'}")
    _parent_ok(p, what)
    return p


def check_dir(path: str | Path, what: str) -> Path:
    """A directory to write into: it exists and is writable, or its parent does."""
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise JitterscopeError(f"{what} {p}: not a directory")
        if not os.access(p, os.W_OK | os.X_OK):
            raise JitterscopeError(f"{what} {p}: directory is not writable")
        return p
    _parent_ok(p, what)
    return p


def make_dir(path: str | Path, what: str) -> Path:
    """`check_dir`, then create the directory itself (never its parents)."""
    p = check_dir(path, what)
    try:
        p.mkdir(exist_ok=True)
    except OSError as err:
        raise JitterscopeError(f"{what} {p}: cannot create directory ({err.strerror})") from None
    return p
