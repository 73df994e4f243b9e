"""Pass 2 of the replay (replay.py): every thread's items on one simulated clock, in recorded order,
through the happens-before edges of the sync run (release -> wake-up, create -> start)."""

from __future__ import annotations

import bisect
import heapq
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from jitterscope.whatif.program import Program, Segment, Wait
from jitterscope.whatif.replay import Plan


@dataclass
class Timeline:
    end_ns: float  # the simulated program's length (first start -> last end)
    seg_start: dict[int, list[float]]  # per thread: simulated start of each item
    approximated: int  # releases read before their segment was placed


class _Clock:
    def __init__(self, prog: Program, plans: dict[int, Plan], jitter: bool, polls: dict[int, float]) -> None:
        self.prog, self.plans, self.jitter, self.polls = prog, plans, jitter, polls
        self.rec_starts = {
            t: [float(it.start) if isinstance(it, Segment) else float(it.enter) for it in th.items]
            for t, th in prog.threads.items()
        }
        self.sim_start: dict[int, list[float]] = {t: [np.nan] * len(th.items) for t, th in prog.threads.items()}
        self.sim_end: dict[int, list[float]] = {t: [np.nan] * len(th.items) for t, th in prog.threads.items()}
        self.approx = 0
        self.rounds: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for t, th in prog.threads.items():
            for i, it in enumerate(th.items):
                if isinstance(it, Wait) and it.op == "barrier" and it.release is not None:
                    self.rounds[(it.obj, it.release)].append((t, i))

    def at(self, tid: int, t: float) -> float:
        """Simulated time of recorded instant t on thread tid (its segment's offset map)."""
        th = self.prog.threads.get(tid)
        if th is None:
            self.approx += 1
            return t
        k = bisect.bisect_right(self.rec_starts[tid], t) - 1
        while k >= 0 and not isinstance(th.items[k], Segment):
            k -= 1  # inside a wait: the end of the segment before it
        if k < 0:
            self.approx += 1
            return t
        while k >= 0 and np.isnan(self.sim_start[tid][k]):
            self.approx += 1  # not placed yet (a tie in recorded order)
            k -= 1
        if k < 0:
            return t
        seg = th.items[k]
        assert isinstance(seg, Segment)
        m = self.plans[tid].maps[k]
        assert m is not None
        return self.sim_start[tid][k] + float(np.interp(min(max(t - seg.start, 0), seg.end - seg.start), m[0], m[1]))

    def wait_end(self, tid: int, i: int, w: Wait, enter: float) -> float:
        if w.release is None:  # releaser unknown: the recorded wait, as it was ...
            end = enter + (w.exit - w.enter) - (0 if self.jitter else w.jitter)
            poll = self.polls.get(id(w))
            # ... unless the release that ends its polling loop comes first: a timed wait returns then
            return end if poll is None else min(end, max(enter, poll))
        rel = self.at(w.releaser, w.release)
        for t2, i2 in self.rounds.get((w.obj, w.release), []) if w.op == "barrier" else []:
            e2 = self.sim_start[t2][i2]
            if not np.isnan(e2):
                rel = max(rel, e2)  # the round's last simulated arrival releases it
        return max(enter, rel + self.latency(w))

    def latency(self, w: Wait) -> float:
        assert w.release is not None
        return max((w.exit - w.release) - (0 if self.jitter else w.jitter), 0)

    def poll_ends(self) -> dict[int, float]:
        """Per polling wait, when the release ending its loop wakes the thread on this timeline."""
        out: dict[int, float] = {}
        for th in self.prog.threads.values():
            for it in th.items:
                if isinstance(it, Wait) and it.ends_by is not None and it.ends_by.release is not None:
                    out[id(it)] = self.at(it.ends_by.releaser, it.ends_by.release) + self.latency(it.ends_by)
        return out


POLL_PASSES = 6  # a polled release moves only when its releaser itself polls: a few passes settle


def place(prog: Program, plans: dict[int, Plan], jitter: bool) -> Timeline:
    """Every item's simulated start and end; the program's simulated length.

    Items are placed in recorded order, so a polling wait (a timed condvar wait, Wait.ends_by) cannot
    see the release that ends its loop when it is placed: the first pass keeps the recorded waits, each
    next pass ends them at the release's time on the previous pass's timeline, until nothing moves."""
    polls: dict[int, float] = {}
    for _ in range(POLL_PASSES):
        c, tl = _place(prog, plans, jitter, polls)
        new = c.poll_ends()
        if not new or new == polls:
            break
        polls = new
    return tl


def _place(prog: Program, plans: dict[int, Plan], jitter: bool, polls: dict[int, float]) -> tuple[_Clock, Timeline]:
    c = _Clock(prog, plans, jitter, polls)
    heap: list[tuple[float, int, int, int]] = []
    for tid, th in prog.threads.items():
        heapq.heappush(heap, (float(th.start), 0, tid, 0))
    clock: dict[int, float] = {}
    while heap:
        _, _, tid, i = heapq.heappop(heap)
        th = prog.threads[tid]
        if i == 0:
            if th.creator in prog.threads and th.create_ns is not None:
                clock[tid] = c.at(th.creator, th.create_ns) + (th.start - th.create_ns)
            else:
                clock[tid] = float(th.start)
        it = th.items[i]
        if np.isnan(c.sim_start[tid][i]):
            c.sim_start[tid][i] = clock[tid]
        if isinstance(it, Segment):
            m = plans[tid].maps[i]
            assert m is not None
            clock[tid] += float(m[1][-1])
        else:
            clock[tid] = c.wait_end(tid, i, it, clock[tid])
        c.sim_end[tid][i] = clock[tid]
        if i + 1 < len(th.items):
            nxt = th.items[i + 1]
            key = float(nxt.start) if isinstance(nxt, Segment) else float(nxt.exit)
            if isinstance(nxt, Wait):
                c.sim_start[tid][i + 1] = clock[tid]  # its entry is known now: a barrier round needs it
            heapq.heappush(heap, (key, 1 if isinstance(nxt, Wait) else 0, tid, i + 1))
    first = min(float(th.start) for th in prog.threads.values())
    return c, Timeline(max(clock.values()) - first, c.sim_start, c.approx)
