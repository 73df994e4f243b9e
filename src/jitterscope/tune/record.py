"""The persistent record of what `tune apply` (and a kept `tune verify`) changed, and `tune revert`.

A record is a journal (journal.py's format: a header line, then one JSON entry
per change with its original value, the value tune wrote, the knob's name and
form) that outlives the process: `<state dir>/tune/<time>-<pid>.jsonl`, not in
/run, so it survives a reboot.  While `apply` changes the system the entries sit
in its ordinary journal (a crash there is undone by the next command or
`jitterscope restore`); once every change is made and re-read, they are written
to the record (fsynced, renamed into place) and the journal is closed empty.

Reverting goes newest first and proves each knob: its value is re-read after
the undo and compared with the original.  A knob whose value is no longer what
tune wrote was changed by someone else since: it is reported, not overwritten.
Runtime settings do not survive a reboot (the header keeps the boot id): after
one they are skipped, and said so; bootloader edits are reverted.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from jitterscope import journal, sysinfo
from jitterscope.errors import JitterscopeError
from jitterscope.knobs.base import canonical
from jitterscope.units import format_cpulist


def record_dir() -> Path:
    return journal.state_dir() / "tune"


def records() -> list[Path]:
    """Records, oldest first."""
    d = record_dir()
    return sorted(d.glob("*.jsonl"), key=lambda p: p.name) if d.is_dir() else []


def persist(j: journal.Journal, label: str, plan: str | None = None, out: str | None = None) -> Path | None:
    """Hand the journal's changes over to a new record (journal.Journal.hand_over); None when nothing changed.
    `plan`: the plan file tune apply applied; `out`: tune verify's output directory."""
    d = record_dir()
    d.mkdir(parents=True, exist_ok=True)
    path = j.hand_over(
        d / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.jsonl",
        kind="tune-record",
        time=time.time(),
        boot_id=sysinfo.boot_id(),
        host=sysinfo.host(),
        kernel=sysinfo.kernel(),
        argv=sys.argv,
        label=label,
        plan=plan,
        out=out,
    )
    j.undo()  # nothing left to undo: this closes and deletes the journal
    return path


def load(path: Path) -> tuple[journal.Header, list[journal.Entry]]:
    try:
        return journal.read_journal(path)
    except OSError as err:
        raise JitterscopeError(f"{path}: cannot read the tune record ({err.strerror})") from None


def now_value(e: journal.Entry) -> str | None:
    """The current value of what entry `e` changed (canonical), None if it is gone."""
    if e["op"] == "affinity":
        if journal.process_start_time(int(e["pid"])) != e.get("start"):
            return None
        return format_cpulist(sorted(os.sched_getaffinity(int(e["pid"]))))
    if e["op"] == "file":
        p = Path(e["path"])
        if not p.exists():
            return None
        return p.read_text() if e.get("form") == "text" else canonical(e.get("form", "text"), journal.read_setting(p))
    return None


def original(e: journal.Entry) -> str:
    if e["op"] == "affinity":
        return format_cpulist(e["cpus"])
    return str(e["original"]) if e.get("form") == "text" else canonical(e.get("form", "text"), str(e["original"]))


def shown(e: journal.Entry, value: str | None) -> str:
    if value is None:
        return "(gone)"
    return "(file contents)" if e.get("form") == "text" else value
