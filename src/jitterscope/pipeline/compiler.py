"""The compiler: graph → schedule, the five steps a-e of the thesis section 3.4 (deterministic).

    sched = compile_graph(load_graph("examples/pipeline/appendix.yaml"), threads=2,
                          heuristic="fixed", memory="simple")

Step e (code generation) is the schedule file (schedule.py) that the native
runtime interprets; every schedule, compiled or read from a file, passes the
same safety check (verify.py) before it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from jitterscope.errors import UsageError
from jitterscope.pipeline import heuristics as H
from jitterscope.pipeline import sos as S
from jitterscope.pipeline.graph import Graph
from jitterscope.pipeline.memory import (
    ALLOCATORS,
    MemoryMap,
    allocate,
    buffer_accessors,
    precedes,
)
from jitterscope.pipeline.order import Order
from jitterscope.pipeline.split import Instantiated, instantiate
from jitterscope.pipeline.sync import Signal, Sync, synchronise
from jitterscope.pipeline.verify import verify

MAX_THREADS = 1024
MAX_SUBBOXES = 100_000


class OptionsDict(TypedDict):
    """The compiler's options as schedule.yaml and meta.json write them (`split` resolved)."""

    threads: int
    heuristic: str
    memory: str
    split: int
    cache_slack: float
    max_states: int
    max_time_s: float


@dataclass
class Options:
    threads: int = 2
    heuristic: str = "predictable"
    memory: str = "reuse"
    split: int | None = None  # sub-boxes per parallel box (default: threads)
    cache_slack: float = 0.0  # predictable/reduced: how much later the producer's thread may start
    max_states: int = S.DEFAULT_MAX_STATES
    max_time_s: float = S.DEFAULT_MAX_TIME_S

    @property
    def parts(self) -> int:
        return self.split or self.threads

    def as_dict(self) -> OptionsDict:
        return {
            "threads": self.threads,
            "heuristic": self.heuristic,
            "memory": self.memory,
            "split": self.parts,
            "cache_slack": self.cache_slack,
            "max_states": self.max_states,
            "max_time_s": self.max_time_s,
        }


@dataclass
class Schedule:
    graph: Graph
    inst: Instantiated
    options: Options
    plan: H.ThreadPlan
    memory: MemoryMap
    sync: Sync
    notes: list[str] = field(default_factory=list)

    @property
    def threads(self) -> list[list[int]]:
        return self.plan.threads

    @property
    def signals(self) -> list[Signal]:
        return self.sync.signals

    @property
    def ops(self) -> list[list[tuple[str, int]]]:
        return self.sync.ops

    def op_text(self, t: int) -> list[str]:
        """Thread t's op list as the appendix writes it: `W s1`, `E f8.0`, `S s3`."""
        subs = self.inst.subboxes
        return [f"E {subs[i].name}" if k == "E" else f"{k} {self.signals[i].name}" for k, i in self.ops[t]]


def check_options(opts: Options) -> None:
    if opts.heuristic not in H.HEURISTICS:
        raise UsageError(f"--heuristic must be one of {', '.join(H.HEURISTICS)}, got {opts.heuristic!r}")
    if opts.memory not in ALLOCATORS:
        raise UsageError(f"--memory must be one of {', '.join(ALLOCATORS)}, got {opts.memory!r}")
    if not 1 <= opts.threads <= MAX_THREADS:
        raise UsageError(f"--threads must be from 1 to {MAX_THREADS}, got {opts.threads}")
    if not 1 <= opts.parts <= MAX_THREADS:
        raise UsageError(f"--split must be from 1 to {MAX_THREADS}, got {opts.parts}")
    if opts.cache_slack < 0:
        raise UsageError(f"--cache-slack must be >= 0, got {opts.cache_slack}")


def compile_graph(g: Graph, opts: Options | None = None, **kw: Any) -> Schedule:
    opts = opts or Options(**kw)
    check_options(opts)
    notes: list[str] = []
    parts = opts.parts
    if parts > g.height:
        notes.append(f"split {parts} is more than the image's {g.height} rows; boxes split into {g.height}")
    n_sub = sum(min(parts, g.height) if b.spec.parallel else 1 for b in g.boxes)
    if n_sub > MAX_SUBBOXES:
        raise UsageError(f"{g.source}: {n_sub:,} sub-boxes (more than {MAX_SUBBOXES:,}); use a smaller --split")
    inst = instantiate(g, parts)  # a + dependencies
    plan = H.schedule(inst, opts.heuristic, opts.threads, opts.cache_slack, opts.max_states, opts.max_time_s)  # b
    if plan.sos is not None and not plan.sos.proven:
        notes.append(
            f"reduced: minimum peak of active data not proven after {plan.sos.states:,} states "
            f"({plan.sos.seconds:.1f} s); using the best order found (raise --max-states/--max-time)"
        )
    empty = sum(1 for t in plan.threads if not t)
    if empty:
        plan.threads = [t for t in plan.threads if t]
        notes.append(f"{empty} of {opts.threads} threads got no sub-box (the graph has too little parallelism)")
    order = Order(len(inst.subboxes), plan.threads, [(p, c, 0) for p, c in inst.edges])
    anc = order.ancestors0()
    mem = allocate(inst, plan, opts.memory, anc)  # c
    prec = precedes(buffer_accessors(inst), anc)
    sync = synchronise(inst, plan, mem, prec)  # d
    sched = Schedule(g, inst, opts, plan, mem, sync, notes)

    verify(sched)  # the compiler's own output must pass the check every schedule file passes
    return sched
