"""Replay input: recorded counters the controller's law runs on in virtual time.

A CSV with a header naming the time unit and cumulative byte counters, one row
per reading (like a perf counter read at time t):

    t_us,read_bytes,write_bytes
    0,0,0
    100,200000,0
    200,400000,0

`t_ns`, `t_us` or `t_s`; times strictly increasing; counters whole, non-negative,
never decreasing.  Between rows the counters are interpolated linearly, so any
Ts can be replayed.  The law sees each window [t, t+Ts] after a resume exactly
as the live controller would; the decisions are exactly reproducible.
"""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from jitterscope import boundedio
from jitterscope.errors import JitterscopeError
from jitterscope.protect import signals
from jitterscope.protect.controller import run_replay
from jitterscope.protect.outcome import RECORDS, Outcome
from jitterscope.protect.plan import law_args
from jitterscope.rundir import create_run_dir

if TYPE_CHECKING:
    from jitterscope.protect.outcome import Outcome
    from jitterscope.protect.plan import Plan

UNITS = {"t_ns": 1, "t_us": 1000, "t_s": 1_000_000_000}
ROW_DTYPE = np.dtype([("t_ns", "<i8"), ("read_bytes", "<u8"), ("write_bytes", "<u8")])
MAX_ROWS = 50_000_000


def _int(text: str, where: str, what: str) -> int:
    try:
        v = int(text.strip())
    except ValueError:
        raise JitterscopeError(f"{where}: {what} must be a whole number, got {text.strip()!r}") from None
    if v < 0:
        raise JitterscopeError(f"{where}: {what} must not be negative")
    return v


def read_csv(path: Path) -> np.ndarray:
    """The rows of a replay CSV (ROW_DTYPE), checked; one line naming file:line otherwise."""
    text = boundedio.read_text(path, "replay file")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader, [])]
    if len(header) != 3 or header[0] not in UNITS or header[1:] != ["read_bytes", "write_bytes"]:
        raise JitterscopeError(
            f"{path}:1: header must be t_ns|t_us|t_s,read_bytes,write_bytes, got {','.join(header) or 'nothing'}"
        )
    scale = UNITS[header[0]]
    rows: list[tuple[int, int, int]] = []
    for line, row in enumerate(reader, start=2):
        if not row or not "".join(row).strip():
            continue
        where = f"{path}:{line}"
        if len(row) != 3:
            raise JitterscopeError(f"{where}: expected 3 fields, got {len(row)}")
        t, r, w = (_int(v, where, k) for v, k in zip(row, header))
        if rows and t * scale <= rows[-1][0]:
            raise JitterscopeError(f"{where}: times must increase")
        if rows and (r < rows[-1][1] or w < rows[-1][2]):
            raise JitterscopeError(f"{where}: counters are cumulative and must never decrease")
        rows.append((t * scale, r, w))
        if len(rows) > MAX_ROWS:
            raise JitterscopeError(f"{path}: more than {MAX_ROWS:,} rows")
    if len(rows) < 2:
        raise JitterscopeError(f"{path}: needs at least two rows after the header")
    return np.array(rows, dtype=ROW_DTYPE)


def write_binary(rows: np.ndarray, path: Path) -> None:
    """The rows as the controller reads them (int64 t_ns, uint64 read, uint64 write per row)."""
    rows.astype(ROW_DTYPE).tofile(path)


def run_plan(plan: Plan) -> tuple[Path, Outcome]:
    """The law on recorded counters, in virtual time: exactly reproducible decisions."""

    assert plan.replay is not None
    rows = read_csv(plan.replay)
    out = Outcome(started_unix_ns=time.time_ns(), signal="replay", signal_reason="requested", s_ns=plan.s_ns)
    text = plan.threshold or signals.default_threshold("replay")
    t = signals.parse_threshold(text, "replay")
    if t.percent is not None:
        if plan.peak_bps is None:
            raise JitterscopeError(
                f"--threshold {text} for a replay: a percentage needs --peak BW "
                f"(or give the threshold as a bandwidth, e.g. 2GB/s)"
            )
        t.read_bps = t.write_bps = t.percent * plan.peak_bps
    out.threshold = {"text": text, "read_bps": t.read_bps, "write_bps": t.write_bps}
    run_dir = create_run_dir(plan.out)
    (run_dir / "raw").mkdir()
    write_binary(rows, run_dir / "raw" / "replay.bin")
    args = law_args(plan, plan.s_ns) + [
        "--signal",
        "replay",
        "--actuator",
        "none",
        "--replay",
        str(run_dir / "raw" / "replay.bin"),
    ]
    args += [f"--threshold-{k}={int(v)}" for k, v in (("read", t.read_bps), ("write", t.write_bps)) if v]
    out.end = run_replay(args + ["--unit", str(plan.cpus[0])], run_dir / RECORDS)
    out.ended_by = "end of the replayed counters"
    out.wall_s = out.end["duration_ns"] / 1e9
    return run_dir, out
