"""Rebuild a complete run from whatever raw capture survived (`jitterscope analyze`).

A measurement writes its raw data first (measure/capture.py).  When it was cut
short — kill -9, a closed terminal, a second Ctrl-C, disk full, a killed MPI
rank — this turns what is left into the same run directory a finished
measurement writes, and lists what could not be recovered (also kept in
meta.json under `recovered.missing`), so a user always gets their run back or
a clear statement of what was lost.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from jitterscope import boundedio
from jitterscope.atomic import sweep_temporaries
from jitterscope.errors import JitterscopeError
from jitterscope.measure import build, stream
from jitterscope.measure import capture as C
from jitterscope.measure.probe import (
    CpuStats,
    ProbeResult,
    read_detours,
    read_header,
    result_from_end,
)
from jitterscope.rundir import require_run_dir
from jitterscope.session import cut_short, started_as
from jitterscope.tracing.session import complete_cut_short


def _probe_result(run_dir: Path, cap: dict[str, Any], missing: list[str]) -> ProbeResult:
    """The probe's result: saved by jitterscope, else written by the probe, else estimated."""
    header = read_header(run_dir / "detours.raw")
    if not header["complete"]:
        missing.append("detours after the probe's last write (it was killed; at most its last 10 ms)")
    if cap.get("state") == "captured" and cap.get("probe"):
        p = dict(cap["probe"])
        p["per_cpu"] = {int(k): v for k, v in p["per_cpu"].items()}
        return ProbeResult(**p)
    hz = float(cap.get("tsc_hz") or header["tsc_hz"])
    t0 = int(cap.get("t0_tsc") or header["t0_tsc"])
    end = boundedio.read_json_or_none(run_dir / "detours.end.json", "probe statistics")
    if end is not None:
        return result_from_end(end, hz, t0)
    missing.append(
        "the probe's loop statistics (it was killed): each CPU's measured time is estimated "
        "from the last detour recorded, and its resolution is unknown"
    )
    raw = read_detours(run_dir / "detours.raw", allow_incomplete=True)
    ends = raw["start_tsc"].astype(np.int64) + raw["duration_tsc"].astype(np.int64)
    end_tsc = int(ends.max()) if len(raw) else t0
    per_cpu: dict[int, CpuStats] = {}
    for c in cap["meta"]["cpus"]:
        mine = raw["cpu"] == int(c)
        per_cpu[int(c)] = {
            "iterations": 0,
            "resolution_ns": 0.0,
            "loop_ns_min": 0.0,
            "min_loop_cycles": 0,
            "detours": int(mine.sum()),
            "dropped": 0,
            "detour_cycles": int(raw["duration_tsc"][mine].sum()),
            "first_tsc": t0,
            "last_tsc": end_tsc,
            "tid": int(cap.get("probe_tids", {}).get(str(c), 0)),
            "estimated": True,
        }
    return ProbeResult(
        tsc_hz=hz,
        t0_tsc=t0,
        end_tsc=end_tsc,
        per_cpu=per_cpu,
        records=len(raw),
        dropped=int(header["dropped"]),
        threshold_cycles=0,
    )


def _trace_dir(
    run_dir: Path, meta: dict[str, Any], end_tsc: int, hz: float, missing: list[str], jobs: int
) -> Path | None:
    """The trace directory, completed offline (window, symbols, comms; its CPUs scanned in `jobs`
    processes) if the run was cut short."""

    td = run_dir / "trace"
    if not meta.get("tracing", {}).get("enabled"):
        return None
    if not (td / "events.txt").exists():
        missing.append("the kernel trace (it had not started): no attribution")
        meta["tracing"].update(enabled=False, reason="trace lost: the run was interrupted before it started")
        return None
    missing += complete_cut_short(td, end_tsc, "the probe's end", jobs, hz)
    return td


def is_complete(run_dir: Path) -> bool:
    """A finished run: its summary is written and no raw capture waits for analysis."""
    return (run_dir / "summary.json").exists() and not (run_dir / C.CAPTURE).exists()


def analyze(run_dir: Path, jobs: int | None = None) -> list[str] | None:
    """Write the complete run in `run_dir` from its raw capture; return what was missing
    (None: it was already complete).

    One analysis at a time per run (a lock on the directory itself: nothing is added
    to the run); a second one waits for the first, then finds the run complete.  The trace's
    CPUs are analysed in `jobs` processes (default: every CPU this process may use)."""
    run_dir = require_run_dir(run_dir)
    fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return None if is_complete(run_dir) else _analyze(run_dir, jobs)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the capture is only deleted once the run is whole
        raise KeyboardInterrupt(
            f"interrupted while analysing: nothing is lost, the raw capture is kept in "
            f"{run_dir}; `jitterscope analyze {run_dir}` finishes the run"
        ) from None
    finally:
        os.close(fd)


def _analyze(run_dir: Path, jobs: int | None = None) -> list[str]:
    cap = C.load_capture(run_dir)
    if cap is None:
        if (run_dir / "detours.raw").exists():
            raise JitterscopeError(
                f"{run_dir}: capture.json is missing or corrupt, so the raw records cannot "
                f"be placed (which CPUs, options, host): the run cannot be rebuilt"
            )
        if started_as(run_dir, "measure"):  # meta.json as the session wrote it at the start (session.py)
            cut_short(run_dir, "killed before the probe started: nothing was measured")
        raise JitterscopeError(f"{run_dir}: nothing to analyse (no raw capture: capture.json, detours.raw)")
    busy = C.owner_alive(cap)
    if busy is not None:
        raise JitterscopeError(
            f"{run_dir}: still being measured (jitterscope pid {busy}); analyze it once that "
            f"run has ended, if it does not finish the run itself"
        )
    if not (run_dir / "detours.raw").exists():
        raise JitterscopeError(
            f"{run_dir}: the probe's records (detours.raw) are missing: the measurement "
            f"never started or they were deleted; nothing to rebuild"
        )
    sweep_temporaries(run_dir)
    missing: list[str] = []
    meta = dict(cap["meta"])
    result = _probe_result(run_dir, cap, missing)
    finished = cap.get("state") == "captured"
    meta["interrupted"] = bool(cap.get("interrupted")) or not finished
    if "steal_ns" in cap:
        meta["steal_ns"] = float(cap["steal_ns"])
    else:
        missing.append("hypervisor steal time during the run (not used to judge what is unexplained)")
    jobs = jobs if jobs is not None else stream.default_jobs()
    trace_dir = _trace_dir(run_dir, meta, int(result.end_tsc), float(result.tsc_hz), missing, jobs)
    meta["recovered"] = {"by": "jitterscope analyze", "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "missing": missing}
    try:
        build.build_run(
            run_dir, meta, result, trace_dir, set(cap.get("own_tids", [])), allow_incomplete=True, jobs=jobs
        )
        C.finish(run_dir)
    except JitterscopeError as err:
        raise C.kept(run_dir, err, "analysing", by_analyze=True) from None
    return missing
