"""`whatif dvfs`: a recorded sync run replayed ideal, as recorded, and with the DVFS controller for each
reactivity k; the result as plain data (rendering is in render.py, the figure in plots.py).

Normalised times as in the paper's Fig. 10: the ideal replay (no jitter, nominal frequency) is 1.0.
Residual jitter = compensated - ideal; `removed` = share of the recorded slowdown the controller took
away.  Power and energy (spec A.7 [impl]): dynamic, relative, factor^3 per subframe weighted by its
simulated busy time; energy relative to the ideal run's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from jitterscope.whatif.controller import Controller
from jitterscope.whatif.program import Program
from jitterscope.whatif.replay import Mode, Ops, compile_ops, plan_all
from jitterscope.whatif.results import DvfsResult, DvfsRow, TraceRow
from jitterscope.whatif.timing import place


@dataclass
class DvfsOptions:
    ctl: Controller
    reactivity: tuple[int, ...] = (1, 2, 4)
    subframe_ns: int = 330_000
    warmup: int = 90
    evict_ns: float = 0.0  # A.6: jitter booked per kernel burst for the L2 lines it evicts


def _replay(prog: Program, mode: Mode, ops: dict[int, Ops]) -> tuple[float, Any, Any]:
    plans = plan_all(prog, mode, ops)
    tl = place(prog, plans, mode.jitter)
    return tl.end_ns, plans, tl


def _trace(plans: dict[int, Any], tl: Any, k: int) -> list[TraceRow]:
    out: list[TraceRow] = []
    for tid, p in plans.items():
        starts = np.asarray(tl.seg_start[tid], dtype=float)[p.sub_item] + p.sub_off
        for n, (start, f, t, j) in enumerate(
            zip(starts.tolist(), p.sub_f.tolist(), p.sub_t.tolist(), p.sub_j.tolist())
        ):
            out.append(
                {"k": k, "tid": tid, "subframe": n, "start_ns": start, "factor": f, "busy_ns": t, "jitter_count_ns": j}
            )
    return out


def _per_k(
    prog: Program,
    o: DvfsOptions,
    k: int,
    ideal: float,
    recorded: float,
    ideal_energy: float,
    ops: dict[int, Ops],
    want_trace: bool,
) -> tuple[DvfsRow, list[TraceRow]]:
    ctl = replace(o.ctl, k=k)
    end, plans, tl = _replay(prog, Mode(True, ctl, o.subframe_ns, o.warmup, o.evict_ns), ops)
    nsub = sum(len(p.sub_f) for p in plans.values())
    f = np.concatenate([p.sub_f for p in plans.values()]) if nsub else np.ones(1)
    busy = np.concatenate([p.sub_t for p in plans.values()]) if nsub else np.zeros(1)
    changes = sum(int(np.count_nonzero(np.diff(p.sub_f))) for p in plans.values())
    energy = float((f**3 * busy).sum())
    slow = recorded - ideal
    row: DvfsRow = {
        "k": k,
        "run_ns": end,
        "normalized": end / ideal if ideal else 1.0,
        "residual_ns": end - ideal,
        "removed": (recorded - end) / slow if slow > 0 else None,
        "power": float((f**3 * busy).sum() / busy.sum()) - 1.0 if busy.sum() > 0 else 0.0,
        "energy": energy / ideal_energy if ideal_energy else None,
        "transitions": changes,
        "subframes": nsub,
        "saturated": float(np.mean(f >= ctl.table[-1])),
        "below_nominal": float(np.mean(f < 1.0)),
        "factors": {f"{x:g}": int((np.isclose(f, x)).sum()) for x in ctl.table if np.isclose(f, x).any()},
        "approximated": tl.approximated,
    }
    return row, _trace(plans, tl, k) if want_trace else []


def dvfs(prog: Program, o: DvfsOptions, want_trace: bool = True) -> tuple[DvfsResult, list[TraceRow]]:
    """The what-if result and (with want_trace) the per-subframe frequency trace of every k."""
    ops = compile_ops(prog, o.subframe_ns)
    ideal, iplans, _ = _replay(prog, Mode(False, None, o.subframe_ns, o.warmup), ops)
    recorded, rplans, _ = _replay(prog, Mode(True, None, o.subframe_ns, o.warmup), ops)
    ideal_energy = sum(p.energy for p in iplans.values())
    recorded_energy = sum(p.energy for p in rplans.values())
    rows: list[DvfsRow] = []
    trace: list[TraceRow] = []
    for k in o.reactivity:
        row, tr = _per_k(prog, o, k, ideal, recorded, ideal_energy, ops, want_trace)
        rows.append(row)
        trace += tr
    c = o.ctl
    res: DvfsResult = {
        "threads": len(prog.threads),
        "recorded_ns": prog.recorded_ns,
        "ideal_ns": ideal,
        "replayed_ns": recorded,
        "recorded_normalized": recorded / ideal if ideal else 1.0,
        "lost_ns": prog.lost_ns,
        "wake_jitter_ns": prog.wake_jitter_ns,
        "non_sync_seen": prog.non_sync_seen,
        "polled_waits": prog.polls,
        "missed_switches": prog.missed_switches,
        "recorded_energy": recorded_energy / ideal_energy if ideal_energy else None,
        "best_k": min(rows, key=lambda r: (r["run_ns"], r["k"]))["k"] if rows else None,
        "by_k": rows,
        "options": {
            "subframe_ns": o.subframe_ns,
            "warmup": o.warmup,
            "table": list(c.table),
            "transition_ns": c.transition_ns,
            "model": c.model,
            "alpha": c.alpha,
            "quantize": c.quantize,
            "reactivity": list(o.reactivity),
            "evict_ns_per_burst": o.evict_ns,
        },
    }
    return res, trace
