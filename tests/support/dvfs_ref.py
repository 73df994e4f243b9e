"""Pure-Python reference of the DVFS replay's pass 1 (the former whatif/replay.py, replaced by the native
src/jitterscope/native/dvfs.c): written for clarity, the tests require identical results from both.

Replay a recorded program on a simulated machine (spec A.13): ideal, as recorded, and with the DVFS
controller (controller.py) on every thread.

Two passes, because a thread's controller only sees its own jitter (the paper's controller "does
not have instantaneous knowledge of the critical path"; jitter counts meet only at create and join,
spec A.5):

1. per thread, in its own order: its compute (segment wall time minus the time lost in it) is cut
   into subframes of `subframe_ns` of nominal work (A.13); before each the controller picks a factor
   (after `warmup` subframes at 1.0), the work runs at tau(f), a change of factor stalls the core
   `transition_ns`, recorded lost time and wake-up jitter are added unchanged (DVFS speeds the
   program, not the kernel), and J += T - tau(f0).  A create and a join force a deadline; a created
   thread starts with its creator's J, a join takes the max (A.5).  This gives each segment a map
   from recorded offset to simulated offset.
2. all threads together, in recorded order: a segment starts when its thread's previous item ends;
   a wait ends at max(entry, its release on the releaser's simulated timeline + the wake-up latency),
   a barrier round's release being the latest simulated arrival of the round; a thread starts at its
   creator's simulated create + the recorded start latency.  Program order (which thread gets a
   lock, which arrival is last) stays as recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jitterscope.whatif.program import Program, Segment, Thread, Wait
from jitterscope.whatif.replay import Mode


@dataclass
class _Plan:
    maps: list[tuple[np.ndarray, np.ndarray] | None]  # per item: segment offset map (rec -> sim)
    subs: list[tuple[int, float, float, float, float]] = field(default_factory=list)  # item, sim off, f, T, J
    end_j: float = 0.0
    busy: float = 0.0  # compute + stalls + jitter, simulated ns
    energy: float = 0.0  # sum f^3 T


class _Schedule:
    """Pass 1 for one thread."""

    def __init__(self, th: Thread, mode: Mode, j0: float, plans: dict[int, _Plan], prog: Program) -> None:
        self.mode, self.ctl, self.prog, self.plans = mode, mode.ctl, prog, plans
        self.j, self.f, self.n = j0, 1.0, 0
        self.open, self.left, self.t, self.tau0, self.pending = False, 0.0, 0.0, 0.0, 0.0
        self.evict = 0.0
        self.plan = _Plan([None] * len(th.items))
        self.item, self.sim_off, self.start_off = 0, 0.0, 0.0
        for i, it in enumerate(th.items):
            self.item = i
            if isinstance(it, Segment):
                self.plan.maps[i] = self._segment(it)
            else:
                self._wait(it)
        self._close()
        self.plan.end_j = self.j

    def _begin(self, rec: float, bp: list[tuple[float, float]]) -> None:
        f = self.ctl.choose(self.mode.subframe_ns, self.j) if self.ctl and self.n >= self.mode.warmup else 1.0
        if self.ctl and f != self.f:
            bp.append((rec, self.sim_off))
            self.sim_off += self.ctl.transition_ns
            self.t += self.ctl.transition_ns
            bp.append((rec, self.sim_off))
        self.f, self.open, self.left = f, True, float(self.mode.subframe_ns)
        self.start_off = self.sim_off
        self.t, self.pending = self.t + self.pending, 0.0

    def _close(self) -> None:
        if not self.open:
            return
        self.plan.subs.append((self.item, self.start_off, self.f, self.t, self.j))
        self.plan.busy += self.t
        self.plan.energy += self.f**3 * self.t
        if self.ctl and self.n >= self.mode.warmup:
            self.j += self.t - self.tau0
            if self.mode.evict_ns != 0.0:
                self.j += self.evict
        self.evict = 0.0
        self.n += 1
        self.open, self.t, self.tau0 = False, 0.0, 0.0

    def _work(self, amount: float, rec: float, bp: list[tuple[float, float]]) -> float:
        scale = self.ctl.scale(self.f) if self.ctl else 1.0
        while amount > 0:
            if not self.open:
                self._begin(rec, bp)
                scale = self.ctl.scale(self.f) if self.ctl else 1.0
            take = min(amount, self.left)
            dt = take * scale
            rec, amount, self.left = rec + take, amount - take, self.left - take
            self.sim_off += dt
            self.t += dt
            self.tau0 += take
            bp.append((rec, self.sim_off))
            if self.left <= 0:
                self._close()
        return rec

    def _segment(self, seg: Segment) -> tuple[np.ndarray, np.ndarray]:
        self.sim_off = 0.0
        bp: list[tuple[float, float]] = [(0.0, 0.0)]
        marks = sorted(
            [(s - seg.start, 1, e - s) for s, e in seg.lost] + [(c - seg.start, 0, tid) for c, tid in seg.creates]
        )
        rec = 0.0
        for off, kind, val in marks:
            rec = self._work(max(off - rec, 0.0), rec, bp)
            if kind == 1:  # lost span of `val` ns
                rec += val
                if self.mode.jitter:
                    self.sim_off += val
                    self.t += val
                    self.evict += self.mode.evict_ns
                bp.append((rec, self.sim_off))
            else:  # pthread_create: deadline, child inherits J
                self._close()
                child = self.prog.threads.get(val)
                if child is not None and val not in self.plans:
                    self.plans[val] = _Schedule(child, self.mode, self.j, self.plans, self.prog).plan
        self._work(max(seg.end - seg.start - rec, 0.0), rec, bp)
        arr = np.array(bp)
        return arr[:, 0], arr[:, 1]

    def _wait(self, w: Wait) -> None:
        if self.mode.jitter and w.jitter:  # the wake-up's jitter counts in the subframe it ends in
            if self.open:
                self.t += w.jitter
            else:
                self.pending += w.jitter
            self.evict += self.mode.evict_ns
        if w.op == "join":
            self._close()
            done = self.plans.get(w.releaser)
            if done is not None:
                self.j = max(self.j, done.end_j)


def plan_all(prog: Program, mode: Mode) -> dict[int, _Plan]:
    plans: dict[int, _Plan] = {}
    for tid in sorted(prog.threads, key=lambda t: (prog.threads[t].start, t)):
        if tid not in plans:  # a thread whose creator was not recorded starts with J = 0
            plans[tid] = _Schedule(prog.threads[tid], mode, 0.0, plans, prog).plan
    return plans
