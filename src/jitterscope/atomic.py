"""Atomic file writes: every file jitterscope writes appears whole or not at all.

A writer writes to a hidden temporary name next to the target
(`.<stem>.<pid>.tmp<suffix>`, so the suffix still tells matplotlib or pyarrow
the format, and dataset readers skip it as hidden), fsyncs it, renames it over
the target and fsyncs the directory.  If anything fails (disk full, Ctrl-C, a
bug) the temporary file is removed, so no `report.html.tmp` is left behind; only
`kill -9` between write and rename can leave one: the next write of the same
file removes it, and `sweep_temporaries` (run by `analyze`) removes all those of
dead processes in a run.

Disk full is one line naming the file (`JitterscopeError`), never a traceback
from deep inside pyarrow or matplotlib.

    with atomic_path(out / "plot.svg") as tmp:
        fig.savefig(tmp)
    with atomic_open(out / "detours.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    write_text(out / "report.html", html)
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from jitterscope.errors import JitterscopeError

_TMP = re.compile(r"^\.(?P<stem>.+)\.(?P<pid>\d+)\.tmp(?P<suffix>\.[^.]*)?$")


def temporary_name(path: Path) -> Path:
    return path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")


def is_disk_full(err: BaseException) -> bool:
    """ENOSPC or EDQUOT, also when a library only kept the message (pyarrow)."""
    if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(err)
    return "No space left on device" in text or "Disk quota exceeded" in text or "errno 28]" in text


def write_error(path: Path, err: BaseException) -> JitterscopeError:
    """The one-line error for a failed write of `path`."""
    if is_disk_full(err):
        return JitterscopeError(f"{path}: disk full (no space left on device)")
    reason = getattr(err, "strerror", None) or str(err).splitlines()[0]
    return JitterscopeError(f"cannot write {path}: {reason}")


def fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot sync a directory; the rename is still atomic
    finally:
        os.close(fd)


def _fsync_file(p: Path) -> None:
    fd = os.open(p, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], durable: bool = True) -> Iterator[Path]:
    """Yield a temporary path to write `path` through; on success it replaces `path`."""
    target = Path(path)
    tmp = temporary_name(target)
    _sweep_siblings(target)
    try:
        yield tmp
        if durable:
            _fsync_file(tmp)
        os.replace(tmp, target)
    except BaseException as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(err, OSError) or (is_disk_full(err) and not isinstance(err, JitterscopeError)):
            raise write_error(target, err) from None
        raise
    if durable:
        fsync_dir(target.parent)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", **kw: Any) -> Iterator[IO[Any]]:
    """open() for writing, through a temporary name (see atomic_path)."""
    with atomic_path(path) as tmp, open(tmp, mode, **kw) as fh:
        yield fh


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8", durable: bool = True) -> None:
    with atomic_path(path, durable=durable) as tmp:
        tmp.write_text(text, encoding=encoding)


def replace_text(path: str | os.PathLike[str], text: str) -> None:
    """Rewrite an existing configuration file (e.g. /etc/default/grub) whole or not at all,
    keeping its mode and owner, and writing through a symlink to the file it names."""
    target = Path(os.path.realpath(path))
    st = target.stat()
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
        os.chmod(tmp, st.st_mode & 0o7777)
        with contextlib.suppress(PermissionError):
            os.chown(tmp, st.st_uid, st.st_gid)


def write_texts(files: list[tuple[Path, str]]) -> None:
    """Files that belong together (a page and its figures): every one is written to its temporary
    first, and only when all are whole are they renamed into place.  A failure (disk full) removes
    the temporaries, so no figure is left beside a missing page."""
    staged: list[tuple[Path, Path]] = []
    target = Path(".")
    try:
        for target, text in files:
            _sweep_siblings(target)
            staged.append((temporary_name(target), target))
            staged[-1][0].write_text(text, encoding="utf-8")
            _fsync_file(staged[-1][0])
        for tmp, target in staged:
            os.replace(tmp, target)
    except BaseException as err:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if isinstance(err, OSError):
            raise write_error(target, err) from None
        raise
    for d in {t.parent for _, t in staged}:
        fsync_dir(d)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def _sweep_siblings(target: Path) -> None:
    """A temporary of `target` that a killed writer left (kill -9 between write and rename) goes
    when `target` is next written: a report rewritten after a kill leaves no litter beside it."""
    try:
        found = list(target.parent.glob(f".{glob.escape(target.stem)}.*.tmp{glob.escape(target.suffix)}"))
    except OSError:
        return
    for p in found:
        m = _TMP.match(p.name)
        if m and m["stem"] == target.stem and not Path(f"/proc/{m['pid']}").exists():
            with contextlib.suppress(OSError):
                p.unlink()


def sweep_temporaries(d: Path) -> list[Path]:
    """Remove temporaries that dead processes left in `d` (and below); return them."""
    removed = []
    for p in Path(d).rglob(".*.tmp*"):
        m = _TMP.match(p.name)
        if not m or Path(f"/proc/{m['pid']}").exists():
            continue
        with contextlib.suppress(OSError):
            p.unlink()
            removed.append(p)
    return removed
