"""jitterscope's trace instances beyond one session: removing those of dead
processes, and saving what they still hold first.

Each `TraceSession` journals its instance (`trace_instance`: the instance, the
capture directory it drains into, its CPUs) and also leaves a drain record in
/run/jitterscope/instances/<name>.json, readable by any jitterscope process
whatever its journal directory.  Whoever removes the instance of a process that
died (the journal's recovery through `undo_instance`, or the next session's
`clean_stale_instances`) first stops it, copies the pages still in the kernel's
ring buffer into the capture and saves the ring statistics, so `analyze` gets
everything the run recorded.  It takes the instance's drain lock first, which
the session's reader holds for as long as it runs: a reader still draining the
instance of its dead jitterscope finishes before anyone appends after it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from pathlib import Path
from typing import TypedDict

from jitterscope import atomic
from jitterscope.journal import Entry, Outcome, process_start_time

INSTANCE_PREFIX = "jitterscope-"


def read_stats(path: Path) -> dict[str, int]:
    """per_cpu/cpuN/stats → {overrun, commit_overrun, entries, dropped_events, read_events, bytes}."""
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(":")
        try:
            out[key.strip().replace(" ", "_")] = int(value.strip())
        except ValueError:
            continue  # timestamps ("oldest event ts") are not counts
    return out


def save_stats(instance: Path, out_dir: Path, cpus: list[int]) -> dict[str, dict[str, int]]:
    """The instance's per-CPU ring statistics, saved as stats.json."""
    stats: dict[str, dict[str, int]] = {}
    for cpu in cpus:
        try:
            stats[str(cpu)] = read_stats(instance / "per_cpu" / f"cpu{cpu}" / "stats")
        except OSError:
            continue
    atomic.write_text(out_dir / "stats.json", json.dumps(stats, indent=1) + "\n")
    return stats


def rmdir_retry(path: Path, timeout_s: float = 5.0) -> None:
    """Remove an instance; the kernel says EBUSY while a file in it is still open."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as err:
            if err.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


# Where each live instance drains to, readable by any jitterscope process whatever
# its journal directory, so whoever removes a dead run's instance saves its pages.
DRAIN_RECORDS = Path("/run/jitterscope/instances")


class Drain(TypedDict):
    """Where an instance drains to: the capture directory and the CPUs it traces."""

    drain_to: str
    cpus: list[int]


def drain_record(name: str) -> Path:
    return DRAIN_RECORDS / f"{name}.json"


def drain_lock(name: str) -> Path:
    """Held by the instance's reader while it runs and by whoever removes a dead run's instance."""
    return DRAIN_RECORDS / f"{name}.lock"


def record_drain(name: str, drain: Drain) -> None:
    """Say where instance `name` (made by this process) drains to: {drain_to, cpus}."""
    DRAIN_RECORDS.mkdir(parents=True, exist_ok=True)
    atomic.write_text(
        drain_record(name),
        json.dumps({**drain, "pid": os.getpid(), "start": process_start_time(os.getpid())}),
        durable=False,
    )


def clean_stale_instances(root: Path) -> list[str]:
    """Remove jitterscope-<pid> instances whose process is gone (saving what they
    still hold into their capture directory), and their drain records' temporaries; return their names."""
    removed = []
    inst = root / "instances"
    for d in sorted(inst.glob(f"{INSTANCE_PREFIX}*")):
        suffix = d.name[len(INSTANCE_PREFIX) :]
        if not suffix.isdigit():
            continue
        try:
            rec = json.loads(drain_record(d.name).read_text())
        except (OSError, ValueError):
            rec = {}
        pid = int(suffix)
        start = process_start_time(pid)
        if pid != os.getpid() and start is not None and rec.get("start", start) == start:
            continue  # a live jitterscope owns it
        try:
            _remove_instance(d, rec.get("drain_to"), rec.get("cpus", []))
            removed.append(d.name)
        except OSError:
            continue
    # a record being written when its process was killed: a temporary no later write of that name removes
    if DRAIN_RECORDS.is_dir():
        atomic.sweep_temporaries(DRAIN_RECORDS)
    return removed


def undo_instance(e: Entry) -> Outcome:
    """Journal undo of `trace_instance`: save what the instance still holds into the
    capture directory it was draining into (if that still exists), then remove it."""
    inst = Path(e["path"])
    if not inst.exists():
        drain_record(inst.name).unlink(missing_ok=True)
        drain_lock(inst.name).unlink(missing_ok=True)
        return Outcome("unchanged", f"trace instance {inst} already removed")
    pages = _remove_instance(inst, e.get("drain_to"), e.get("cpus", []))
    saved = f" after saving its last {pages} page(s) into {e['drain_to']}" if pages else ""
    return Outcome("restored", f"removed trace instance {inst}{saved}")


def _remove_instance(inst: Path, drain_to: str | None, cpus: list[int]) -> int:
    """Save what the instance still holds into `drain_to` (if that capture still exists),
    remove it; return the pages saved.  One process at a time per instance: two that
    drained together would interleave its pages in the capture."""
    DRAIN_RECORDS.mkdir(parents=True, exist_ok=True)
    with open(drain_lock(inst.name), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not inst.exists():  # the other one finished it; our open made the lock file again
            drain_lock(inst.name).unlink(missing_ok=True)
            return 0
        out = Path(drain_to) if drain_to else None
        pages = 0
        if out is not None and out.is_dir() and (out / "session.json").exists():
            pages = _drain_instance(inst, out, [int(c) for c in cpus])
        rmdir_retry(inst, timeout_s=2.0)
        drain_record(inst.name).unlink(missing_ok=True)
        drain_lock(inst.name).unlink(missing_ok=True)
    return pages


def _drain_instance(inst: Path, out: Path, cpus: list[int]) -> int:
    try:
        (inst / "tracing_on").write_text("0")
        page = int(json.loads((out / "session.json").read_text()).get("page_size") or 4096)
    except (OSError, ValueError):
        page = 4096
    pages = 0
    for cpu in cpus:
        try:
            fd = os.open(inst / "per_cpu" / f"cpu{cpu}" / "trace_pipe_raw", os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            with open(out / f"cpu{cpu}.raw", "ab", buffering=0) as fh:
                while True:
                    try:
                        data = os.read(fd, page)
                    except OSError:
                        break
                    if not data:
                        break
                    fh.write(data)
                    pages += 1
        finally:
            os.close(fd)
    if not (out / "stats.json").exists():
        save_stats(inst, out, cpus)
    return pages
