"""Step c: memory allocation (the thesis section 3.4.3, spec 003 section 3.4).

- simple: one separate range per buffer (the appendix: m0, m2, m4 = 786,432 B).
- reuse: buffers share memory unless they interfere.  Two buffers interfere
  when their lifetimes can overlap within an iteration: unless every access of
  one happens before every access of the other (program order of the threads
  plus the dependencies, which the signals enforce), Chaitin-style [5].  They
  are placed first-fit in the order the schedule first writes them: the first
  region of exactly the right size no interfering buffer uses, else the lowest
  offset where it fits, else at the end ("reallocates the first region with the
  correct size", L1214).  Reuse across iterations is made safe by signals
  (sync.py), not by the allocator.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterscope.pipeline.heuristics import ThreadPlan
from jitterscope.pipeline.split import Instantiated

ALLOCATORS = ("simple", "reuse")


@dataclass
class MemoryMap:
    allocator: str
    offsets: list[int]  # per buffer (graph.buffers order)
    sizes: list[int]
    total: int
    order: list[int]  # allocation order (buffer indices)

    def range(self, b: int) -> tuple[int, int]:
        return self.offsets[b], self.offsets[b] + self.sizes[b]

    def overlap(self, a: int, b: int) -> bool:
        (a0, a1), (b0, b1) = self.range(a), self.range(b)
        return a0 < b1 and b0 < a1

    @property
    def regions(self) -> int:
        """Distinct ranges used (2 for a linear chain on one thread with reuse)."""
        return len({self.range(b) for b in range(len(self.offsets))})


def buffer_accessors(inst: Instantiated) -> list[int]:
    """Per buffer, the bitset of sub-boxes that read or write it."""
    acc = [0] * len(inst.graph.buffers)
    for s, accesses in enumerate(inst.accesses):
        for a in accesses:
            acc[a.buffer] |= 1 << s
    return acc


def precedes(acc: list[int], anc: list[int]) -> list[list[bool]]:
    """prec[x][y]: every access of buffer x happens before every access of buffer y (one iteration)."""
    n_sub = len(anc)
    full = (1 << n_sub) - 1
    common = []
    for y in acc:
        c, bits = full, y
        while bits:
            low = bits & -bits
            c &= anc[low.bit_length() - 1]
            bits ^= low
        common.append(c)
    return [[x != y and acc[x] & ~common[y] == 0 for y in range(len(acc))] for x in range(len(acc))]


def interference(inst: Instantiated, anc: list[int]) -> list[set[int]]:
    acc = buffer_accessors(inst)
    prec = precedes(acc, anc)
    n = len(acc)
    return [{y for y in range(n) if y != x and not prec[x][y] and not prec[y][x]} for x in range(n)]


def allocation_order(inst: Instantiated, plan: ThreadPlan) -> list[int]:
    """Buffers in the order the schedule first writes them (simulated start, then box order)."""
    pos = {b: i for i, b in enumerate(inst.box_order)}
    first: dict[int, float] = {}
    for s, accesses in enumerate(inst.accesses):
        for a in accesses:
            if a.write:
                first[a.buffer] = min(first.get(a.buffer, float("inf")), plan.start[s])
    bufs = inst.graph.buffers
    return sorted(range(len(bufs)), key=lambda b: (first[b], pos[bufs[b].box], b))


def allocate(inst: Instantiated, plan: ThreadPlan, allocator: str, anc: list[int]) -> MemoryMap:
    size = inst.graph.buffer_bytes
    order = allocation_order(inst, plan)
    n = len(inst.graph.buffers)
    sizes = [size] * n
    offsets = [0] * n
    if allocator == "simple":
        for i, b in enumerate(order):
            offsets[b] = i * size
        return MemoryMap(allocator, offsets, sizes, n * size, order)
    if allocator != "reuse":
        raise ValueError(allocator)
    conflicts = interference(inst, anc)
    placed: list[int] = []
    for b in order:
        offsets[b] = _first_fit(b, placed, offsets, sizes, conflicts[b])
        placed.append(b)
    total = max((offsets[b] + sizes[b] for b in range(n)), default=0)
    return MemoryMap(allocator, offsets, sizes, total, order)


def _first_fit(b: int, placed: list[int], offsets: list[int], sizes: list[int], conflicts: set[int]) -> int:
    busy = sorted((offsets[p], offsets[p] + sizes[p]) for p in placed if p in conflicts)

    def free(off: int) -> bool:
        return all(not (off < e and s < off + sizes[b]) for s, e in busy)

    # a released region of exactly this size (a placed, non-interfering buffer's range)
    for off in sorted({offsets[p] for p in placed if sizes[p] == sizes[b] and p not in conflicts}):
        if free(off):
            return off
    for off in sorted({0} | {offsets[p] + sizes[p] for p in placed}):
        if free(off):
            return off
    return max((offsets[p] + sizes[p] for p in placed), default=0)
