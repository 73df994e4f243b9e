"""The slack law's calibration: the critical program's latency against the best-effort share.

`jitterscope protect calibrate` runs the critical and best-effort programs once
per share D (default 1, 0.5, 0.25, 0.1 and 0, each for --duration): D = 1
unthrottled, D = 0 with no best-effort program at all, anything between
duty-cycled unconditionally (`--signal always`, S = Ts (1 - D) / D) through the
chosen actuator.  It stores each point's critical latency (mean, p99, max) and
best-effort progress in a file, which the slack law (slacklaw.py) reads.
`--warmup T` leaves out each point's heartbeats in the first T after the first
one: a critical program restarted for every point starts up every time (the
pipeline runtime's first iterations run late on its release grid).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from jitterscope import atomic, options
from jitterscope.errors import JitterscopeError
from jitterscope.outpath import check_file
from jitterscope.protect import build, plan, session
from jitterscope.protect.results import Latency
from jitterscope.protect.slacklaw import Calibration, Point
from jitterscope.units import format_ns

DEFAULT_SHARES = (1.0, 0.5, 0.25, 0.1, 0.0)


def _steady(run_dir: Path, c: Latency | None, warmup_ns: float) -> Latency | None:
    """The critical latency without the heartbeats of the first `warmup_ns` (the program's start-up)."""
    if not warmup_ns or not c:
        return c
    from jitterscope.rundir import load_run

    it = load_run(run_dir).table("iterations")
    t, latency = it["t_ns"].to_numpy(), it["latency_ns"].to_numpy()
    return build.latency(latency[t >= t.min() + warmup_ns], None)


def _point(plan_args: dict[str, Any], share: float, tmp: Path, warmup_ns: float = 0) -> Point:

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
    summ = out.summary
    if summ is None:  # session.run returns only once the run is built
        raise AssertionError("protect calibrate: the run was not built")
    c = _steady(run_dir, summ["phases"]["protected"]["critical"], warmup_ns)
    if not c:
        raise JitterscopeError(
            f"the critical program published no heartbeats in {a['duration']} at share "
            f"{share:.2f}: calibration needs its latency (the report API, as jitterscope-chase "
            "uses it); one that starts slowly needs a longer --duration"
        )
    be = summ["phases"]["protected"]["best_effort"]
    return Point(
        share=share,
        count=c["count"],
        mean_ns=c["mean_ns"],
        p99_ns=c["p99_ns"],
        max_ns=c["max_ns"],
        progress_bytes_per_s=be["progress_bytes_per_s"],
        cpu_share=be["cpu_share"],
    )


def calibrate_command(args: argparse.Namespace) -> int:
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
    probe = plan.build(dict(a, out=None))  # checks every option once, before the first point
    warmup = plan.duration(args.warmup, "--warmup", (0.0, 3600.0)) if args.warmup else 0.0
    if warmup >= plan.duration(a["duration"], "--duration", (1e-3, 1e6)):
        raise JitterscopeError(f"--warmup {args.warmup} leaves nothing of --duration {a['duration']} to measure")
    points = []
    with tempfile.TemporaryDirectory(prefix="jitterscope-calibrate-") as tmp:
        for s in shares:
            points.append(_point(a, s, Path(tmp), warmup))
            if not args.json:
                p = points[-1]
                print(
                    f"share {s:4.2f}: critical mean {format_ns(p.mean_ns)}, p99 {format_ns(p.p99_ns)}, "
                    f"max {format_ns(p.max_ns)}",
                    flush=True,
                )
    cal = {
        "format": "jitterscope-protect-calibration",
        "version": 1,
        "sample_ns": probe.ts_ns,
        "actuator": probe.actuator,
        "critical": probe.critical_cmd,
        "best_effort": probe.be_cmds,
        "warmup_ns": warmup,
        "points": [p.model_dump() for p in points],
    }
    Calibration.model_validate(cal)
    atomic.write_text(out, json.dumps(cal, indent=2) + "\n")
    if args.json:
        options.print_json(cal)
    else:
        print(f"calibration written to {out}")
    return 0
