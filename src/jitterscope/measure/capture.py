"""The raw capture of a measurement, written first and kept until its run is complete.

While a measurement runs, its run directory holds only raw data:

    capture.json        the run's metadata as known at the start, then the probe's
                        clock (t0, TSC rate) and thread ids once it runs, then its
                        result once it stops (each update written atomically)
    detours.raw         the probe's records, drained every 10 ms
    detours.end.json    the probe's end statistics, written by the probe itself
                        (so they survive a killed jitterscope)
    trace/              raw trace pages, written unbuffered as they are read

Analysis then writes the tables, meta.json and summary.json (atomically, the
summary last), fsyncs them, and only then removes the raw probe files and
capture.json (trace/ stays: it is part of the run).  Whatever interrupts this
(kill -9, SIGHUP, a second Ctrl-C, disk full, a bug), the raw data stays, and
`jitterscope analyze DIR` builds the complete run from it (measure/recover.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from jitterscope import atomic, boundedio
from jitterscope.config import validate
from jitterscope.errors import JitterscopeError
from jitterscope.journal import process_start_time

CAPTURE = "capture.json"
FORMAT = "jitterscope-capture"
RAW_FILES = ("detours.raw", "detours.end.json", CAPTURE)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Options(_Open):
    threshold_ns: float = Field(gt=0, allow_inf_nan=False)


class _Tracing(_Open):
    enabled: bool


class _CaptureMeta(_Open):
    """What analysis reads of capture.json's meta (the rest is kept as it is)."""

    id: str
    host: str
    kernel: str
    start: str
    cpus: list[int] = Field(min_length=1)
    options: _Options
    tracing: _Tracing


class _CaptureFile(_Open):
    state: str
    meta: _CaptureMeta
    tsc_hz: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    t0_tsc: int | None = None
    own_tids: list[int] = []
    probe_tids: dict[str, int] = {}


class Capture:
    """capture.json of one run directory: the metadata a recovery needs."""

    def __init__(self, run_dir: Path, meta: dict[str, Any]) -> None:
        self.run_dir = run_dir
        self.data: dict[str, Any] = {
            "format": FORMAT,
            "version": 1,
            "state": "capturing",
            "meta": meta,
            "pid": os.getpid(),
            "start": process_start_time(os.getpid()),
        }
        self.probe_started = False
        self._save(strict=True)

    def _save(self, strict: bool = False) -> None:
        try:
            atomic.write_text(self.run_dir / CAPTURE, json.dumps(self.data, indent=1) + "\n")
        except JitterscopeError:
            if strict:
                raise
            # later updates are a convenience: the raw files alone still rebuild the run

    def probe_running(
        self, tsc_hz: float, t0_tsc: int, own_tids: set[int], probe_tids: dict[int, int], steal_before: dict[int, int]
    ) -> None:
        self.probe_started = True
        self.data.update(
            tsc_hz=tsc_hz,
            t0_tsc=int(t0_tsc),
            own_tids=sorted(own_tids),
            probe_tids={str(c): t for c, t in probe_tids.items()},
            steal_ticks_before={str(k): v for k, v in steal_before.items()},
        )
        self._save()

    def captured(self, result: Any, interrupted: bool, steal_ns: float, own_tids: set[int]) -> None:
        probe = dataclasses.asdict(result)
        probe["per_cpu"] = {str(k): v for k, v in probe["per_cpu"].items()}
        self.data.update(
            state="captured", probe=probe, interrupted=interrupted, steal_ns=steal_ns, own_tids=sorted(own_tids)
        )
        self._save()


def load_capture(run_dir: Path) -> dict[str, Any] | None:
    """capture.json, or None when there is none (or it is unreadable); a capture.json
    whose fields have the wrong types is a one-line error."""
    data = boundedio.read_json_or_none(run_dir / CAPTURE, "capture record")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    validate(data, _CaptureFile, str(run_dir / CAPTURE))  # one line naming the key, never a traceback later
    return data


def owner_alive(cap: dict[str, Any]) -> int | None:
    """The pid of the jitterscope still measuring into this capture, if it lives."""
    pid = cap.get("pid")
    if pid is None or pid == os.getpid():
        return None
    return int(pid) if process_start_time(int(pid)) == cap.get("start") else None


def has_raw(run_dir: Path) -> bool:
    """Whether the probe started writing here (there is something to analyse)."""
    try:
        return (run_dir / "detours.raw").stat().st_size > 0
    except OSError:
        return False


def finish(run_dir: Path) -> None:
    """The run is complete: make it durable, then drop the raw probe files and capture.json."""
    for p in run_dir.iterdir():
        if p.is_file() and p.name not in RAW_FILES:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    atomic.fsync_dir(run_dir)
    # capture.json first: while it exists the run waits for analysis (recover.is_complete), so a kill
    # between these unlinks must never leave it beside a raw capture already gone
    (run_dir / CAPTURE).unlink(missing_ok=True)
    atomic.fsync_dir(run_dir)
    for name in RAW_FILES:
        (run_dir / name).unlink(missing_ok=True)
    atomic.fsync_dir(run_dir)


def _disk_full(run_dir: Path, err: BaseException) -> bool:
    if atomic.is_disk_full(err):
        return True
    try:
        st = os.statvfs(run_dir)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


def kept(
    run_dir: Path, err: BaseException, stage: str, kept_as: Path | None = None, by_analyze: bool = False
) -> BaseException:
    """The error to raise when `stage` failed after the probe started: the run
    directory is never deleted then, and the message says how to finish it
    (`kept_as`: where the caller moves it, e.g. a cluster rank's scratch run).  From `analyze` itself
    (`by_analyze`) an error in what was captured is not followed by the advice to run `analyze` again: only an
    interrupt or a full disk, which another try can get past, are."""
    where = kept_as or run_dir
    hint = f"`jitterscope analyze {where}` finishes the run"
    if isinstance(err, KeyboardInterrupt):  # still an interrupt: callers that stop on Ctrl-C stop
        return KeyboardInterrupt(
            f"interrupted again while {stage}: nothing is lost, the raw capture is kept in {where}; {hint}"
        )
    if _disk_full(run_dir, err):
        return JitterscopeError(
            f"disk full while {stage} ({run_dir}): the raw capture so far is kept in "
            f"{where}; free some space, then {hint}"
        )
    if isinstance(err, JitterscopeError):
        tail = f"kept in {where} as it is" if by_analyze else f"kept in {where}: {hint}"
        return JitterscopeError(f"{err} (while {stage}); the raw capture is {tail}", exit_code=err.exit_code)
    print(f"jitterscope: the raw capture is kept in {where}: {hint}", file=sys.stderr)
    return err


def discard(run_dir: Path) -> None:
    """Nothing was measured (the probe never started): leave no half-made run."""
    shutil.rmtree(run_dir, ignore_errors=True)
