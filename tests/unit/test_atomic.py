"""Every file jitterscope writes appears whole or not at all, and leaves no temporary behind."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from jitterscope import atomic, journal
from jitterscope.errors import JitterscopeError


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    atomic.write_text(target, "old")
    with pytest.raises(RuntimeError), atomic.atomic_open(target) as f:
        f.write("half of the new")
        raise RuntimeError("a bug mid-write")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_disk_full_is_one_line_naming_the_file(tmp_path: Path) -> None:
    target = tmp_path / "detours.parquet"
    with pytest.raises(JitterscopeError) as err, atomic.atomic_path(target):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert str(err.value) == f"{target}: disk full (no space left on device)"
    # pyarrow keeps only the message: still recognised
    assert atomic.is_disk_full(OSError("IOError: [Errno 28] No space left on device"))


def test_sweep_removes_only_dead_processes_temporaries(tmp_path: Path) -> None:
    mine = atomic.temporary_name(tmp_path / "summary.json")
    dead = tmp_path / ".summary.999999999.tmp.json"  # no such pid
    for p in (mine, dead):
        p.write_text("{")
    assert atomic.sweep_temporaries(tmp_path) == [dead]
    assert mine.exists() and not dead.exists()


def test_a_config_file_is_replaced_whole_keeping_mode_and_symlink(tmp_path: Path) -> None:
    real = tmp_path / "grub.real"
    real.write_text('GRUB_CMDLINE_LINUX="quiet"\n')
    os.chmod(real, 0o640)
    link = tmp_path / "grub"
    link.symlink_to(real)
    atomic.replace_text(link, 'GRUB_CMDLINE_LINUX="quiet psi=0"\n')
    assert link.is_symlink() and real.read_text().endswith('psi=0"\n')
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    # the journal's undo of such a file goes the same way, and says so once
    entry = {"op": "file", "path": str(link), "original": 'GRUB_CMDLINE_LINUX="quiet"\n', "form": "text"}
    first = journal.UNDO["file"](entry)
    assert isinstance(first, journal.Outcome) and first.status == "restored"
    assert real.read_text() == entry["original"] and stat.S_IMODE(real.stat().st_mode) == 0o640
    again = journal.UNDO["file"](entry)
    assert isinstance(again, journal.Outcome) and again.status == "unchanged"


def test_the_next_write_removes_what_a_killed_writer_left(tmp_path: Path) -> None:
    left = tmp_path / ".report.999999999.tmp.html"  # kill -9 between write and rename
    other = tmp_path / ".report-sources.999999999.tmp.svg"  # another file's: not this write's business
    for p in (left, other):
        p.write_text("<html")
    atomic.write_text(tmp_path / "report.html", "<html></html>")
    assert not left.exists() and other.exists()
