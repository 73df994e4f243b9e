"""The slack law's calibration: the critical program's latency against the best-effort share.

`jitterscope protect calibrate` runs the critical and best-effort programs once
per share D (default 1, 0.5, 0.25, 0.1 and 0, each for --duration): D = 1
unthrottled, D = 0 with no best-effort program at all, anything between
duty-cycled unconditionally (`--signal always`, S = Ts (1 - D) / D) through the
chosen actuator.  It stores each point's critical latency (mean, p99, max) and
best-effort progress in a file.  The slack law then picks the largest share
whose predicted p99 latency (linear between points, made non-decreasing in D)
stays within --deadline, and duty-cycles with S = Ts (1 - D) / D: the thesis's
section 4.6.4 ("S/Ts from the RT constraints and isolated performance")
made concrete (spec 003 section 4.4 [D]).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from jitterscope import atomic
from jitterscope.config import ConfigModel, load_config
from jitterscope.errors import JitterscopeError
from jitterscope.units import format_ns

DEFAULT_SHARES = (1.0, 0.5, 0.25, 0.1, 0.0)


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
    points: list[Point] = Field(min_length=2)


def load(path: Path) -> Calibration:
    return load_config(path, Calibration, what="calibration file")


def best_share(cal: Calibration, deadline_ns: float) -> float:
    """The largest best-effort share whose predicted p99 critical latency is within the deadline."""
    pts = sorted(cal.points, key=lambda p: p.share)
    shares = np.array([p.share for p in pts])
    p99 = np.maximum.accumulate(np.array([p.p99_ns for p in pts]))   # more share never helps the critical one
    if p99[0] > deadline_ns:
        raise JitterscopeError(f"the deadline {format_ns(deadline_ns)} is missed even at a best-effort share of "
                               f"{shares[0]:.2f} (p99 {format_ns(p99[0])}): no duty cycle can meet it")
    grid = np.linspace(shares[0], shares[-1], 1001)
    ok = grid[np.interp(grid, shares, p99) <= deadline_ns]
    return float(ok.max())


def suspension_for(cal: Calibration, deadline_ns: float, ts_ns: float) -> float:
    """S for the slack law: Ts (1 - D) / D at the best share D (0 when D = 1: no suspension needed)."""
    d = best_share(cal, deadline_ns)
    return 0.0 if d >= 1.0 else ts_ns * (1 - d) / d


def _point(plan_args: dict[str, Any], share: float, tmp: Path) -> dict[str, Any]:
    from jitterscope.protect import build, plan, runmeta, session

    a = dict(plan_args, out=str(tmp / f"share-{share:.3f}"), compare=None)
    if share >= 1.0:
        a.update(signal="none", actuator="none")
    elif share <= 0.0:
        a.update(signal="none", actuator="none", best_effort_cmd=None, best_effort=None, best_effort_cgroup=None)
    else:
        ts = plan.duration(str(a.get("sample") or "100us"), "--sample", plan.TS_BOUNDS)
        a.update(signal="always", suspend=f"{ts * (1 - share) / share:.0f}ns")
    p = plan.build(a, calibrating=True)
    p.progress = False
    run_dir, out = session.run(p)
    summ = build.build(run_dir, runmeta.meta(p, out, run_dir), run_dir / session.RECORDS)
    c = summ["phases"]["protected"]["critical"]
    if not c:
        raise JitterscopeError("the critical program published no heartbeats: calibration needs its latency "
                               "(the report API, as jitterscope-chase uses it)")
    be = summ["phases"]["protected"]["best_effort"]
    return {"share": share, "count": c["count"], "mean_ns": c["mean_ns"], "p99_ns": c["p99_ns"],
            "max_ns": c["max_ns"], "progress_bytes_per_s": be["progress_bytes_per_s"], "cpu_share": be["cpu_share"]}


def calibrate_command(args: argparse.Namespace) -> int:
    from jitterscope import options
    from jitterscope.outpath import check_file
    from jitterscope.protect import plan

    if not args.out:
        raise JitterscopeError("protect calibrate needs --out FILE (where to store the sweep)")
    if not args.critical_cmd:
        raise JitterscopeError("protect calibrate needs --critical-cmd (it restarts the program for every share)")
    out = check_file(args.out, "--out")
    shares = sorted({float(s) for s in (args.shares or ",".join(map(str, DEFAULT_SHARES))).split(",")}, reverse=True)
    if any(not 0 <= s <= 1 for s in shares) or len(shares) < 2:
        raise JitterscopeError("--shares: at least two shares from 0 to 1, e.g. 1,0.5,0.1,0")
    a = vars(args).copy()
    a["priority"] = options.priority(args)
    a["duration"] = a.get("duration") or "3s"
    probe = plan.build(dict(a, out=None))   # checks every option once, before the first point
    points = []
    with tempfile.TemporaryDirectory(prefix="jitterscope-calibrate-") as tmp:
        for s in shares:
            points.append(_point(a, s, Path(tmp)))
            if not args.json:
                p = points[-1]
                print(f"share {s:4.2f}: critical mean {format_ns(p['mean_ns'])}, p99 {format_ns(p['p99_ns'])}, "
                      f"max {format_ns(p['max_ns'])}", flush=True)
    cal = {"format": "jitterscope-protect-calibration", "version": 1, "sample_ns": probe.ts_ns,
           "actuator": probe.actuator, "critical": probe.critical_cmd, "best_effort": probe.be_cmds, "points": points}
    Calibration.model_validate(cal)
    atomic.write_text(out, json.dumps(cal, indent=2) + "\n")
    if args.json:
        options.print_json(cal)
    else:
        print(f"calibration written to {out}")
    return 0
