"""Step a: data parallelism.  Split boxes into row sub-boxes; dependencies from region overlap.

Every parallel box becomes `parts` sub-boxes, sub-box i computing output rows
[i*H//parts, (i+1)*H//parts) (the appendix: f6.0 [0,0]:[256,128], f6.1
[0,128]:[256,256]); a box that cannot be split stays whole.  Sub-box B depends
on A iff A writes rows of a buffer that B reads: B's output rows widened by
its input port's footprint, clipped to the image (spec 003 section 3.2).
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterscope.pipeline.graph import Graph, topological


@dataclass(frozen=True)
class SubBox:
    index: int  # position in the canonical order (boxes in declaration order, then part)
    box: str
    part: int
    row0: int
    row1: int
    weight: float

    @property
    def name(self) -> str:
        return f"{self.box}.{self.part}"

    def region(self, width: int) -> list[int]:
        """[x0, y0, x1, y1] as the appendix writes it: [x0, y0]:[x1, y1]."""
        return [0, self.row0, width, self.row1]


@dataclass(frozen=True)
class Access:
    """Rows of one buffer a sub-box reads or writes."""

    buffer: int
    row0: int
    row1: int
    write: bool


@dataclass
class Instantiated:
    """The instantiated description: sub-boxes, their accesses and fine-grained dependency edges."""

    graph: Graph
    parts: int
    subboxes: list[SubBox]
    accesses: list[list[Access]]  # per sub-box
    edges: list[tuple[int, int]]  # (producer, consumer) sub-box indices, sorted
    box_order: list[str]  # a topological order of the boxes

    def by_box(self, box: str) -> list[SubBox]:
        return [s for s in self.subboxes if s.box == box]

    def preds(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.subboxes]
        for a, b in self.edges:
            out[b].append(a)
        return out

    def succs(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.subboxes]
        for a, b in self.edges:
            out[a].append(b)
        return out

    def index(self, name: str) -> int:
        return self._names[name]

    def __post_init__(self) -> None:
        self._names = {s.name: s.index for s in self.subboxes}


def row_ranges(height: int, parts: int) -> list[tuple[int, int]]:
    parts = max(1, min(parts, height))
    return [(i * height // parts, (i + 1) * height // parts) for i in range(parts)]


def instantiate(g: Graph, parts: int) -> Instantiated:
    subs: list[SubBox] = []
    for b in g.boxes:
        ranges = row_ranges(g.height, parts) if b.spec.parallel else [(0, g.height)]
        for i, (r0, r1) in enumerate(ranges):
            subs.append(SubBox(len(subs), b.name, i, r0, r1, b.weight * (r1 - r0) / g.height))
    accesses: list[list[Access]] = []
    for s in subs:
        box = g.box(s.box)
        acc = [Access(buf.index, s.row0, s.row1, True) for buf in g.outputs(s.box)]
        for p in box.spec.inputs:
            up, down = p.halo
            acc.append(Access(g.inputs[(s.box, p.name)], max(0, s.row0 - up), min(g.height, s.row1 + down), False))
        accesses.append(acc)
    writers: dict[int, list[tuple[int, int, int]]] = {}
    for s in subs:
        for a in accesses[s.index]:
            if a.write:
                writers.setdefault(a.buffer, []).append((s.index, a.row0, a.row1))
    edges: set[tuple[int, int]] = set()
    for s in subs:
        for a in accesses[s.index]:
            if a.write:
                continue
            for w, r0, r1 in writers[a.buffer]:
                if r0 < a.row1 and a.row0 < r1:
                    edges.add((w, s.index))
    return Instantiated(g, parts, subs, accesses, sorted(edges), topological(g))
