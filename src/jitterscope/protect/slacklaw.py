"""The slack law: the largest best-effort share whose predicted critical latency meets the deadline.

It reads the sweep `protect calibrate` stores (points of share -> the critical program's latency),
predicts the p99 latency at any share by linear interpolation between points, made non-decreasing
in the share (more co-runner time never helps the critical program), and picks the largest share D
within the deadline; S = Ts (1 - D) / D.  The thesis's section 4.6.4 ("S/Ts from the RT constraints
and isolated performance") made concrete (spec 003 section 4.4 [D]).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from jitterscope.config import ConfigModel, load_config
from jitterscope.errors import JitterscopeError
from jitterscope.units import format_ns


class Point(ConfigModel):
    share: float = Field(ge=0, le=1)
    count: int = Field(ge=0)
    mean_ns: float
    p99_ns: float
    max_ns: float
    progress_bytes_per_s: float | None = None
    cpu_share: float | None = None


class Calibration(ConfigModel):
    format: Literal["jitterscope-protect-calibration"]
    version: Literal[1]
    sample_ns: float = Field(gt=0)
    actuator: str
    critical: list[str]
    best_effort: list[list[str]]
    warmup_ns: float = Field(default=0, ge=0)  # each point's first heartbeats left out (the start-up)
    points: list[Point] = Field(min_length=2)


def load(path: Path) -> Calibration:
    return load_config(path, Calibration, what="calibration file")


def best_share(cal: Calibration, deadline_ns: float) -> float:
    """The largest best-effort share whose predicted p99 critical latency is within the deadline."""
    pts = sorted(cal.points, key=lambda p: p.share)
    shares = np.array([p.share for p in pts])
    p99 = np.maximum.accumulate(np.array([p.p99_ns for p in pts]))  # more share never helps the critical one
    if p99[0] > deadline_ns:
        raise JitterscopeError(
            f"the deadline {format_ns(deadline_ns)} is missed even at a best-effort share of "
            f"{shares[0]:.2f} (p99 {format_ns(p99[0])}): no duty cycle can meet it"
        )
    grid = np.linspace(shares[0], shares[-1], 1001)
    ok = grid[np.interp(grid, shares, p99) <= deadline_ns]
    return float(ok.max())


def suspension_for(cal: Calibration, deadline_ns: float, ts_ns: float) -> float:
    """S for the slack law: Ts (1 - D) / D at the best share D (0 when D = 1: no suspension needed)."""
    d = best_share(cal, deadline_ns)
    return 0.0 if d >= 1.0 else ts_ns * (1 - d) / d
