"""Facts the kernel fixes at boot, kept in /run/jitterscope until the next one (/run is emptied at boot).

A record is JSON with the boot's key (its id, and whatever else the fact depends on) and is believed only when
the key matches and its file is root's or this user's: another user's file could say anything.  A private
record (one that holds kernel addresses, which kptr_restrict may hide from other users) is written readable by
its owner alone.  Nothing here fails a command: a record that cannot be read or written is not there."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TypeVar, cast

from jitterscope import boundedio
from jitterscope.atomic import atomic_path
from jitterscope.errors import JitterscopeError

DIR = Path("/run/jitterscope")
T = TypeVar("T")


def read(path: Path, record: type[T], key: str | None, what: str, cap: int, private: bool = False) -> T | None:
    """The record at `path` for boot `key`, as `record` (a TypedDict with a `boot` key: every key it requires
    present; the caller checks the values it uses), or None: another boot's, another user's, unreadable, not such a
    record, or, `private`, readable by others (it is then written again, privately, by the next process that works
    it out).  No pydantic: `inject` and every measurement read the TSC's record before they start, and its import
    doubled `inject`'s."""
    if key is None:
        return None
    try:
        st = path.stat()
        if st.st_uid not in (0, os.geteuid()) or (private and st.st_mode & 0o077):
            return None
        doc = boundedio.read_json_or_none(path, what, cap=cap)
        required: frozenset[str] = getattr(record, "__required_keys__", frozenset())
        if not isinstance(doc, dict) or doc.get("boot") != key or not required <= doc.keys():
            return None
        return cast(T, doc)
    except (OSError, JitterscopeError):
        return None


def write(path: Path, record: T, private: bool = False) -> None:
    """Keep `record` (a TypedDict with its boot's key) at `path` (mode 0600 when `private`, else 0644); silently not,
    where this user cannot write there."""
    try:
        path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        with atomic_path(path, durable=False) as tmp:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.fchmod(fd, 0o600 if private else 0o644)  # whatever the umask, before a byte is written
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")
    except (OSError, JitterscopeError):
        pass  # not root, or /run read-only: the next process works it out again
