"""The reduced heuristic's static-order schedule (SOS) of the structural graph (the thesis section 3.4.2).

Active data while a box runs is every buffer already written that some box
not yet run still reads, plus the box's own outputs (its inputs are among the
former).  The greedy order runs first the ready box that leaves the least
active data behind; a depth-first branch and bound over the other orders then
looks for a smaller peak.  States are the sets of boxes already run (the
active data depends only on that set), memoised with the best peak each was
reached at; a branch is cut when its peak, or the largest single box's own
footprint still to come, reaches the best peak found.  The search stops after
`max_states` expanded states or `max_time` seconds ("when a specific amount of
tokens is reached or when it takes too long", L1183) and reports whether the
optimum was proven.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command module reads this module's defaults: keep its import light
    from jitterscope.pipeline.graph import Graph

DEFAULT_MAX_STATES = 1_000_000
DEFAULT_MAX_TIME_S = 10.0


@dataclass
class Footprints:
    """The structural graph as bitmasks: who produces and who reads each buffer."""

    names: list[str]
    preds: list[int]  # per box: bitmask of boxes it reads from
    outs: list[list[int]]  # per box: buffers it writes
    readers: list[int]  # per buffer: bitmask of boxes that read it
    size: list[int]  # per buffer: bytes
    local: list[int]  # per box: bytes of its inputs + outputs (a lower bound of any peak)

    @classmethod
    def of(cls, g: Graph) -> Footprints:
        idx = {b.name: i for i, b in enumerate(g.boxes)}
        preds = [0] * len(g.boxes)
        outs: list[list[int]] = [[] for _ in g.boxes]
        readers = [0] * len(g.buffers)
        for buf in g.buffers:
            outs[idx[buf.box]].append(buf.index)
            for box, _port in buf.readers:
                readers[buf.index] |= 1 << idx[box]
                preds[idx[box]] |= 1 << idx[buf.box]
        size = [g.buffer_bytes] * len(g.buffers)
        local = []
        for i in range(len(g.boxes)):
            ins = {b for b in range(len(readers)) if readers[b] >> i & 1}
            local.append(sum(size[b] for b in ins) + sum(size[b] for b in outs[i]))
        return cls([b.name for b in g.boxes], preds, outs, readers, size, local)

    def live(self, done: int) -> int:
        """Bytes of buffers written by boxes in `done` that a box outside `done` still reads."""
        total = 0
        for i, bufs in enumerate(self.outs):
            if done >> i & 1:
                for b in bufs:
                    if self.readers[b] & ~done:
                        total += self.size[b]
        return total

    def during(self, done: int, box: int) -> int:
        return self.live(done) + sum(self.size[b] for b in self.outs[box])

    def ready(self, done: int) -> list[int]:
        return [i for i in range(len(self.names)) if not done >> i & 1 and self.preds[i] & ~done == 0]


def peak_of(fp: Footprints, order: list[int]) -> int:
    """Peak active data of running the boxes in `order` (one iteration)."""
    done, peak = 0, 0
    for b in order:
        peak = max(peak, fp.during(done, b))
        done |= 1 << b
    return peak


def greedy(fp: Footprints) -> list[int]:
    done, order = 0, []
    for _ in fp.names:
        best = min(fp.ready(done), key=lambda b: (fp.live(done | 1 << b), fp.during(done, b), b))
        order.append(best)
        done |= 1 << best
    return order


@dataclass
class SosResult:
    order: list[int]  # box indices
    peak: int  # bytes
    greedy_peak: int
    proven: bool  # the search finished: no order has a smaller peak
    states: int
    seconds: float

    def names(self, fp: Footprints) -> list[str]:
        return [fp.names[i] for i in self.order]


def search(fp: Footprints, max_states: int = DEFAULT_MAX_STATES, max_time_s: float = DEFAULT_MAX_TIME_S) -> SosResult:
    """Greedy order, then branch and bound for the minimum peak of active data."""
    t0 = time.monotonic()
    n = len(fp.names)
    best_order = greedy(fp)
    best = peak_of(fp, best_order)
    greedy_peak = best
    seen: dict[int, int] = {}
    states = 0
    stopped = False
    full = (1 << n) - 1
    stack: list[tuple[int, int, list[int]]] = [(0, 0, [])]
    while stack:
        done, peak, order = stack.pop()
        if done == full:
            if peak < best:
                best, best_order = peak, order
            continue
        if peak >= best or seen.get(done, best + 1) <= peak:
            continue
        seen[done] = peak
        states += 1
        if states >= max_states or (states & 1023 == 0 and time.monotonic() - t0 > max_time_s):
            stopped = True
            break
        # bound: the largest own footprint among the boxes not yet run
        rest_bound = max((fp.local[i] for i in range(n) if not done >> i & 1), default=0)
        if max(peak, rest_bound) >= best:
            continue
        live = fp.live(done)
        children = []
        for b in fp.ready(done):
            p = max(peak, live + sum(fp.size[x] for x in fp.outs[b]))
            if p < best:
                children.append((fp.live(done | 1 << b), p, b))
        # push the most promising last so it is expanded first (greedy order first)
        for _after, p, b in sorted(children, reverse=True):
            stack.append((done | 1 << b, p, order + [b]))
    return SosResult(best_order, best, greedy_peak, not stopped, states, time.monotonic() - t0)
