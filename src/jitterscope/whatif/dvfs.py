"""`whatif dvfs`: a recorded sync run replayed ideal, as recorded, and with the DVFS controller for each
reactivity k; the result as plain data (rendering is in render.py, the figure in plots.py).

Normalised times as in the paper's Fig. 10: the ideal replay (no jitter, nominal frequency) is 1.0.
Residual jitter = compensated - ideal; `removed` = share of the recorded slowdown the controller took
away.  Power and energy (spec A.7 [impl]): dynamic, relative, factor^3 per subframe weighted by its
simulated busy time; energy relative to the ideal run's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from jitterscope.whatif.controller import Controller
from jitterscope.whatif.program import Program
from jitterscope.whatif.replay import Mode, plan_all
from jitterscope.whatif.timing import place

CPUFREQ = Path("/sys/devices/system/cpu/cpufreq")


@dataclass
class DvfsOptions:
    ctl: Controller
    reactivity: tuple[int, ...] = (1, 2, 4)
    subframe_ns: int = 330_000
    warmup: int = 90


def _replay(prog: Program, mode: Mode) -> tuple[float, Any, Any]:
    plans = plan_all(prog, mode)
    tl = place(prog, plans, mode.jitter)
    return tl.end_ns, plans, tl


def _trace(plans: dict[int, Any], tl: Any, k: int) -> list[dict[str, Any]]:
    out = []
    for tid, p in plans.items():
        for n, (item, off, f, t, j) in enumerate(p.subs):
            start = tl.seg_start[tid][item] + off
            out.append({"k": k, "tid": tid, "subframe": n, "start_ns": float(start), "factor": f,
                        "busy_ns": float(t), "jitter_count_ns": float(j)})
    return out


def _per_k(prog: Program, o: DvfsOptions, k: int, ideal: float, recorded: float, ideal_energy: float
           ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    ctl = replace(o.ctl, k=k)
    end, plans, tl = _replay(prog, Mode(True, ctl, o.subframe_ns, o.warmup))
    subs = [s for p in plans.values() for s in p.subs]
    f = np.array([s[2] for s in subs]) if subs else np.ones(1)
    busy = np.array([s[3] for s in subs]) if subs else np.zeros(1)
    changes = sum(sum(1 for a, b in zip(p.subs, p.subs[1:]) if a[2] != b[2]) for p in plans.values())
    energy = float((f ** 3 * busy).sum())
    slow = recorded - ideal
    row = {"k": k, "run_ns": end, "normalized": end / ideal if ideal else 1.0, "residual_ns": end - ideal,
           "removed": (recorded - end) / slow if slow > 0 else None,
           "power": float((f ** 3 * busy).sum() / busy.sum()) - 1.0 if busy.sum() > 0 else 0.0,
           "energy": energy / ideal_energy if ideal_energy else None,
           "transitions": changes, "subframes": len(subs),
           "saturated": float(np.mean(f >= ctl.table[-1])), "below_nominal": float(np.mean(f < 1.0)),
           "factors": {f"{x:g}": int((np.isclose(f, x)).sum()) for x in ctl.table if np.isclose(f, x).any()},
           "approximated": tl.approximated}
    return row, _trace(plans, tl, k)


def apply_status() -> str:
    """Why --apply cannot drive real frequencies here (no cpufreq), or that it is not built yet."""
    if not CPUFREQ.exists() or not any(CPUFREQ.glob("policy*")) and not os.path.exists(
            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq"):
        return f"skipped: this host has no cpufreq ({CPUFREQ} is absent or has no policy): no frequency to drive"
    return "skipped: driving cpufreq limits while the program runs is not implemented yet (see docs/commands/whatif.md)"


def dvfs(prog: Program, o: DvfsOptions) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The what-if result and the per-subframe frequency trace of every k."""
    ideal, iplans, _ = _replay(prog, Mode(False, None, o.subframe_ns, o.warmup))
    recorded, rplans, _ = _replay(prog, Mode(True, None, o.subframe_ns, o.warmup))
    ideal_energy = sum(p.energy for p in iplans.values())
    recorded_energy = sum(p.energy for p in rplans.values())
    rows, trace = [], []
    for k in o.reactivity:
        row, tr = _per_k(prog, o, k, ideal, recorded, ideal_energy)
        rows.append(row)
        trace += tr
    c = o.ctl
    res = {"threads": len(prog.threads), "recorded_ns": prog.recorded_ns, "ideal_ns": ideal,
           "replayed_ns": recorded, "recorded_normalized": recorded / ideal if ideal else 1.0,
           "lost_ns": prog.lost_ns, "wake_jitter_ns": prog.wake_jitter_ns,
           "recorded_energy": recorded_energy / ideal_energy if ideal_energy else None,
           "best_k": min(rows, key=lambda r: (r["run_ns"], r["k"]))["k"] if rows else None, "by_k": rows,
           "options": {"subframe_ns": o.subframe_ns, "warmup": o.warmup, "table": list(c.table),
                       "transition_ns": c.transition_ns, "model": c.model, "alpha": c.alpha,
                       "quantize": c.quantize, "reactivity": list(o.reactivity)}}
    return res, trace
