"""`tune revert` and `tune status`: undo records newest first, proving every knob back (see record.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from jitterscope import journal, sysinfo
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Entry
from jitterscope.tune.record import load, now_value, original, records, shown
from jitterscope.tune.records import RecordState, RevertRow

RESOLVED = ("restored", "already back", "gone", "lost at reboot", "regenerated", "not needed")


def _row(e: Entry, before: str | None, now: str | None, result: str, note: str) -> RevertRow:
    return {
        "knob": e.get("knob") or e.get("path") or " ".join(e.get("argv", [])),
        "original": shown(e, original(e)),
        "set": shown(e, e.get("value")),
        "before": shown(e, before),
        "now": shown(e, now),
        "result": result,
        "note": note,
    }


def _one(e: Entry, rebooted: bool, boot_restored: bool) -> RevertRow:
    if e["op"] == "argv":  # regenerating the bootloader's configuration after its file went back
        if not boot_restored:
            return _row(e, None, None, "not needed", "its file was not changed back")
        journal.UNDO["argv"](e)
        return _row(e, None, None, "regenerated", " ".join(e["argv"]))
    now = now_value(e)
    orig = original(e)
    if rebooted and e.get("runtime", True):
        return _row(e, now, now, "lost at reboot", "runtime settings do not survive a reboot: nothing to undo")
    if now is None:
        return _row(e, None, None, "gone", "the process or file no longer exists")
    if now == orig:
        return _row(e, now, now, "already back", "")
    if now != str(e.get("value")):
        return _row(e, now, now, "left alone", "changed by someone else since tune set it: not overwritten")
    try:
        journal.UNDO[e["op"]](e)
    except OSError as err:
        return _row(e, now, now_value(e), "failed", f"the kernel refused the original ({err.strerror or err})")
    after = now_value(e)
    return _row(
        e,
        now,
        after,
        "restored" if after == orig else "failed",
        "re-read: equals the original" if after == orig else f"re-read {after}, expected {orig}",
    )


def revert_record(path: Path) -> RecordState:
    header, entries = load(path)
    rebooted = bool(header.get("boot_id")) and header.get("boot_id") != sysinfo.boot_id()
    rows, keep = [], []
    boot_restored = False
    for e in reversed(entries):
        r = _one(e, rebooted, boot_restored)
        boot_restored |= e["op"] == "file" and not e.get("runtime", True) and r["result"] == "restored"
        rows.append(r)
        if r["result"] not in RESOLVED:
            keep.append(e)
    if keep:  # what could not be proven back stays on record, for `tune status` and another revert
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(x) + "\n" for x in [header, *reversed(keep)]))
        os.replace(tmp, path)
    else:
        path.unlink(missing_ok=True)
    return {
        "record": str(path),
        "label": header.get("label"),
        "time": header.get("time"),
        "rebooted": rebooted,
        "rows": rows,
        "complete": not keep,
    }


def revert(all_records: bool, only: Path | None = None) -> list[RecordState]:
    recs = records()
    if only is not None:
        recs = [r for r in recs if r == only or r.name == only.name]
        if not recs:
            raise JitterscopeError(f"no tune record {only} (see `jitterscope tune status`)")
    if not recs:
        return []
    if os.geteuid() != 0:
        raise JitterscopeError("tune revert changes kernel settings back: run it as root")
    return [revert_record(p) for p in reversed(recs if all_records or only else recs[-1:])]


def status() -> list[RecordState]:
    """Each record with every knob's current state (nothing is changed)."""
    out: list[RecordState] = []
    for p in reversed(records()):
        header, entries = load(p)
        rebooted = bool(header.get("boot_id")) and header.get("boot_id") != sysinfo.boot_id()
        rows = []
        for e in entries:
            if e["op"] == "argv":
                continue
            now = now_value(e)
            state = (
                "lost at reboot"
                if rebooted and e.get("runtime", True)
                else "gone"
                if now is None
                else "as tune set it"
                if now == str(e.get("value"))
                else "back to the original"
                if now == original(e)
                else "changed since"
            )
            rows.append(_row(e, now, now, state, ""))
        out.append(
            {
                "record": str(p),
                "label": header.get("label"),
                "time": header.get("time"),
                "rebooted": rebooted,
                "rows": rows,
            }
        )
    return out
