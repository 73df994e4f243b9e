"""Step b: the five scheduling heuristics of the thesis section 3.4.2 (spec 003 section 3.3).

- simple: one thread per sub-box, the OS schedules them; iterations pipeline.
- barrier: as simple, and no sub-box of iteration k+1 starts before iteration k ends.
- fixed: one pinned thread per processor; list scheduling of the sub-box graph
  (HSDFG) by b-level (longest weighted path to the end, ties on id), each actor
  on the thread that can start it earliest (ties: lowest thread).
- predictable: as fixed, but an actor goes to the thread that ran its
  largest-input producer when that starts it at most `cache_slack` later.
- reduced: actor order from the static-order schedule of the structural graph
  that minimises the peak of active data (sos.py), placement as predictable.

Simulated start and finish times (in weight units) come with the schedule for
`--explain`; everything is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jitterscope.pipeline import sos as S
from jitterscope.pipeline.split import Instantiated

HEURISTICS = ("simple", "barrier", "fixed", "predictable", "reduced")
PINNED = ("fixed", "predictable", "reduced")


@dataclass
class ThreadPlan:
    heuristic: str
    threads: list[list[int]]  # sub-box indices per thread, in execution order
    start: list[float]  # simulated start per sub-box (weight units)
    finish: list[float]
    barrier: bool = False
    sos: S.SosResult | None = None

    @property
    def pinned(self) -> bool:
        return self.heuristic in PINNED

    def thread_of(self) -> list[int]:
        out = [0] * len(self.start)
        for t, subs in enumerate(self.threads):
            for s in subs:
                out[s] = t
        return out


def topo_subboxes(inst: Instantiated) -> list[int]:
    pos = {b: i for i, b in enumerate(inst.box_order)}
    return sorted(range(len(inst.subboxes)), key=lambda i: (pos[inst.subboxes[i].box], inst.subboxes[i].part))


def b_levels(inst: Instantiated) -> list[float]:
    succs = inst.succs()
    bl = [0.0] * len(inst.subboxes)
    for i in reversed(topo_subboxes(inst)):
        bl[i] = inst.subboxes[i].weight + max((bl[s] for s in succs[i]), default=0.0)
    return bl


def input_bytes(inst: Instantiated) -> dict[tuple[int, int], int]:
    """Rows of each consumer's input produced by each of its producers (edge weights for predictable)."""
    out: dict[tuple[int, int], int] = {}
    writes = {(a.buffer, s): (a.row0, a.row1) for s, acc in enumerate(inst.accesses) for a in acc if a.write}
    for p, c in inst.edges:
        rows = 0
        for a in inst.accesses[c]:
            w = writes.get((a.buffer, p))
            if not a.write and w:
                rows += max(0, min(a.row1, w[1]) - max(a.row0, w[0]))
        out[(p, c)] = rows * inst.graph.row_bytes
    return out


def schedule(
    inst: Instantiated,
    heuristic: str,
    threads: int,
    cache_slack: float = 0.0,
    max_states: int = S.DEFAULT_MAX_STATES,
    max_time_s: float = S.DEFAULT_MAX_TIME_S,
) -> ThreadPlan:
    if heuristic not in HEURISTICS:
        raise ValueError(heuristic)
    if heuristic in ("simple", "barrier"):
        return _one_to_one(inst, heuristic)
    bl = b_levels(inst)
    sos = None
    if heuristic == "reduced":
        fp = S.Footprints.of(inst.graph)
        sos = S.search(fp, max_states, max_time_s)
        rank = {fp.names[b]: i for i, b in enumerate(sos.order)}

        def priority(i: int) -> tuple[float, ...]:
            sb = inst.subboxes[i]
            return (rank[sb.box], sb.part, -bl[i], i)
    else:

        def priority(i: int) -> tuple[float, ...]:
            return (-bl[i], i)

    slack = None if heuristic == "fixed" else cache_slack
    plan = _list_schedule(inst, threads, priority, slack)
    plan.heuristic, plan.sos = heuristic, sos
    return plan


def _one_to_one(inst: Instantiated, heuristic: str) -> ThreadPlan:
    preds = inst.preds()
    start = [0.0] * len(inst.subboxes)
    finish = [0.0] * len(inst.subboxes)
    for i in topo_subboxes(inst):
        start[i] = max((finish[p] for p in preds[i]), default=0.0)
        finish[i] = start[i] + inst.subboxes[i].weight
    return ThreadPlan(heuristic, [[i] for i in topo_subboxes(inst)], start, finish, barrier=heuristic == "barrier")


def _list_schedule(
    inst: Instantiated, n_threads: int, priority: Callable[[int], tuple[float, ...]], cache_slack: float | None
) -> ThreadPlan:
    n = len(inst.subboxes)
    preds = inst.preds()
    succs = inst.succs()
    edge_bytes = input_bytes(inst) if cache_slack is not None else {}
    waiting = [len(p) for p in preds]
    ready = sorted((i for i in range(n) if waiting[i] == 0), key=priority)
    avail = [0.0] * n_threads
    start = [0.0] * n
    finish = [0.0] * n
    where = [-1] * n
    threads: list[list[int]] = [[] for _ in range(n_threads)]
    while ready:
        a = ready.pop(0)
        dep = max((finish[p] for p in preds[a]), default=0.0)
        est = [max(avail[t], dep) for t in range(n_threads)]
        t = min(range(n_threads), key=lambda k: (est[k], k))
        if cache_slack is not None and preds[a]:
            by_thread: dict[int, int] = {}
            for p in preds[a]:
                by_thread[where[p]] = by_thread.get(where[p], 0) + edge_bytes.get((p, a), 0)
            warm = min(by_thread, key=lambda k: (-by_thread[k], est[k], k))
            if est[warm] <= est[t] + cache_slack:
                t = warm
        where[a], start[a] = t, est[t]
        finish[a] = est[t] + inst.subboxes[a].weight
        avail[t] = finish[a]
        threads[t].append(a)
        for s in succs[a]:
            waiting[s] -= 1
            if waiting[s] == 0:
                ready.append(s)
        ready.sort(key=priority)
    return ThreadPlan("", threads, start, finish)
