"""Bounded reads: every file jitterscope reads is a regular file under a size cap, checked before reading.

A path a user gives (a model, a plan, a CSV, a run directory) may name anything:
`/dev/zero`, a FIFO that never ends, a symlink loop, a 20 GB file.  Read whole,
any of these exhausts memory or hangs.  So every read goes through here:

    text = read_text(path, "model file")                   # CONFIG_MAX
    data = read_json(run / "meta.json", "run metadata", RUN_JSON_MAX)
    check_file(run / "detours.parquet", "Parquet table", table_cap())

The file is stat'ed first (a device is never even opened: opening one can have
effects), opened without blocking (a FIFO swapped in after the stat does not
hang), checked again on the open descriptor, and read to at most its cap + 1
byte (a file growing while read is still refused).  Every refusal is one line
naming the file; the caps are stated in docs/limits.md.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from jitterscope.errors import JitterscopeError

MiB = 1 << 20
CONFIG_MAX = 16 * MiB
"""A file a person writes: YAML model/plan/graph, CSV profile or labels, a tune plan."""
RUN_JSON_MAX = 64 * MiB
"""A run directory's JSON (meta.json, summary.json, the raw capture's records)."""
NO_CAP = 1 << 62
"""For a file that is mapped or streamed, never held whole: it need only be a regular file."""
RAW_MAX_FRACTION = 2
"""A raw capture or a Parquet table may use at most 1/RAW_MAX_FRACTION of the available memory."""

_KIND = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def table_cap() -> int:
    """Bytes a table or raw capture file may have: half the memory the kernel reports available."""
    from jitterscope.budget import mem_available

    return mem_available() // RAW_MAX_FRACTION


def _size(n: int) -> str:
    return f"{n / MiB:.3g} MiB" if n >= MiB else f"{n} bytes"


def _oserror(p: Path, what: str, err: OSError) -> JitterscopeError:
    if err.errno == errno.ENOENT:
        return JitterscopeError(f"{p}: no such {what}")
    if err.errno == errno.ELOOP:
        return JitterscopeError(f"{p}: cannot read {what} (a symlink loop)")
    if err.errno in (errno.EACCES, errno.EPERM):
        return JitterscopeError(f"{p}: cannot read {what} (permission denied)")
    return JitterscopeError(f"{p}: cannot read {what} ({err.strerror or err})")


def _check_stat(p: Path, what: str, st: os.stat_result, cap: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = _KIND.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise JitterscopeError(f"{p}: cannot read {what} ({kind}; a regular file is needed)")
    if st.st_size > cap:
        raise JitterscopeError(
            f"{p}: {what} is {_size(st.st_size)}, more than the {_size(cap)} this reads (docs/limits.md)"
        )


def check_file(path: str | os.PathLike[str], what: str, cap: int = CONFIG_MAX) -> os.stat_result:
    """The stat of `path` if it is a regular file of at most `cap` bytes (symlinks followed)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as err:
        raise _oserror(p, what, err) from None
    except ValueError:  # an embedded NUL
        raise JitterscopeError(f"{p!r}: not a valid path") from None
    _check_stat(p, what, st, cap)
    return st


def read_bytes(path: str | os.PathLike[str], what: str, cap: int = CONFIG_MAX) -> bytes:
    """The whole content of a regular file of at most `cap` bytes, or one line saying why not."""
    p = Path(path)
    check_file(p, what, cap)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise _oserror(p, what, err) from None
    try:
        _check_stat(p, what, os.fstat(fd), cap)  # the file opened is the file checked
        chunks, left = [], cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 * MiB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as err:
        raise _oserror(p, what, err) from None
    finally:
        os.close(fd)
    if left <= 0:
        raise JitterscopeError(f"{p}: {what} grew past the {_size(cap)} this reads (docs/limits.md)")
    return b"".join(chunks)


def read_text(path: str | os.PathLike[str], what: str, cap: int = CONFIG_MAX) -> str:
    """read_bytes decoded as UTF-8; a file that is not text is one line naming where it stops being."""
    data = read_bytes(path, what, cap)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise JitterscopeError(f"{path}: cannot read {what} (not UTF-8 text at byte {err.start})") from None


def read_json(path: str | os.PathLike[str], what: str, cap: int = RUN_JSON_MAX) -> Any:
    """The parsed JSON of a bounded file; malformed JSON is one line naming the file."""
    text = read_text(path, what, cap)
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise JitterscopeError(f"{path}: corrupt {what} ({str(err).splitlines()[0] or 'too deeply nested'})") from None


def read_json_or_none(path: str | os.PathLike[str], what: str, cap: int = RUN_JSON_MAX) -> Any:
    """read_json, or None when the file is absent or unusable (a record a cut-short run may lack);
    a JSON value that is not an object also gives None."""
    try:
        data = read_json(path, what, cap)
    except JitterscopeError:
        return None
    return data if isinstance(data, dict) else None
