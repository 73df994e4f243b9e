"""Step e: the schedule file (YAML) the runtime executes, written and read through config.py.

    format: jitterscope-pipeline-schedule
    version: 1
    graph: {name: appendix, digest: 3f0c..., file: examples/pipeline/appendix.yaml}
    options: {threads: 2, heuristic: fixed, memory: simple, split: 2, ...}
    subboxes: {f6.0: [0, 0, 256, 128], f6.1: [0, 128, 256, 256], ...}   # [x0, y0, x1, y1]
    edges: [f6.0 => f7.0, ...]
    threads:
      thread0: [W s1, E f8.0, S s2, W s3, E f6.0, S s4, ...]
      thread1: [W s2, W s6, E f6.1, S s1, S s5, ...]
    signals: {s1: {tokens: 1, kind: WAR}, s2: {tokens: 0, kind: RAW}, ...}
    memory: {allocator: simple, total: 786432, buffers: {f8.out: [0, 262144], ...}}

A thread's list repeats every iteration: `W s` takes a token of signal s
(waits for one), `E x` runs sub-box x, `S s` posts a token.  A signal's
`tokens` are its initial tokens (the appendix's `!`).  Reading a file checks
its keys, that it was compiled for this graph (the structure's digest), and
then runs the same safety check as the compiler (verify.py): a hand-edited
schedule that could deadlock or race is refused in one line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import Field
from typing_extensions import TypedDict  # ScheduleFile (pydantic) reads the sos block back

from jitterscope.atomic import write_text
from jitterscope.config import ConfigModel, load_config
from jitterscope.pipeline import heuristics as H
from jitterscope.pipeline.compiler import Options, OptionsDict, Schedule
from jitterscope.pipeline.graph import Graph
from jitterscope.pipeline.memory import MemoryMap
from jitterscope.pipeline.order import Order
from jitterscope.pipeline.split import instantiate
from jitterscope.pipeline.sync import Signal, Sync
from jitterscope.pipeline.verify import ScheduleError, verify

FORMAT = "jitterscope-pipeline-schedule"
VERSION = 1
OP_RE = re.compile(r"^\s*([WES])\s+(\S+)\s*$")
NonNeg = Annotated[int, Field(ge=0)]


class GraphRef(ConfigModel):
    name: str
    digest: str
    file: str | None = None


class SignalSpec(ConfigModel):
    tokens: NonNeg
    kind: str = "RAW"


class MemorySpec(ConfigModel):
    allocator: str
    total: NonNeg
    buffers: dict[str, Annotated[list[NonNeg], Field(min_length=2, max_length=2)]]


class ScheduleFile(ConfigModel):
    format: str
    version: int
    graph: GraphRef
    options: dict[str, Any]
    subboxes: dict[str, list[int]]
    edges: list[str] = Field(default_factory=list)
    threads: dict[str, list[str]] = Field(min_length=1)
    signals: dict[str, SignalSpec] = Field(default_factory=dict)
    memory: MemorySpec
    simulated: dict[str, list[float]] = Field(default_factory=dict)
    sos: SosDoc | None = None
    notes: list[str] = Field(default_factory=list)


class _GraphRefDoc(TypedDict):
    name: str
    digest: str
    file: str | None


class _SignalDoc(TypedDict):
    tokens: int
    kind: str


class _MemoryDoc(TypedDict):
    allocator: str
    total: int
    buffers: dict[str, list[int]]


class SosDoc(TypedDict):
    """The reduced heuristic's search: the order it chose, its peak memory and the greedy order's."""

    order: list[str]
    peak_bytes: int
    greedy_peak_bytes: int
    proven: bool
    states: int


class _DocBase(TypedDict):
    format: str
    version: int
    graph: _GraphRefDoc
    options: OptionsDict
    subboxes: dict[str, list[int]]
    edges: list[str]
    threads: dict[str, list[str]]
    signals: dict[str, _SignalDoc]
    memory: _MemoryDoc
    simulated: dict[str, list[float]]


class ScheduleDoc(_DocBase, total=False):
    """schedule.yaml as written (ScheduleFile reads it back); `sos` for the reduced heuristic."""

    sos: SosDoc
    notes: list[str]


def to_dict(s: Schedule) -> ScheduleDoc:
    subs, g = s.inst.subboxes, s.graph
    doc: ScheduleDoc = {
        "format": FORMAT,
        "version": VERSION,
        "graph": {"name": g.name, "digest": g.digest(), "file": str(g.path) if g.path else None},
        "options": s.options.as_dict(),
        "subboxes": {x.name: x.region(g.width) for x in subs},
        "edges": [f"{subs[a].name} => {subs[b].name}" for a, b in s.inst.edges],
        "threads": {f"thread{t}": s.op_text(t) for t in range(len(s.threads))},
        "signals": {x.name: {"tokens": x.tokens, "kind": x.kind} for x in s.signals},
        "memory": {
            "allocator": s.memory.allocator,
            "total": s.memory.total,
            "buffers": {
                g.buffers[b].name: [s.memory.offsets[b], s.memory.offsets[b] + s.memory.sizes[b]]
                for b in s.memory.order
            },
        },
        "simulated": {x.name: [round(s.plan.start[x.index], 6), round(s.plan.finish[x.index], 6)] for x in subs},
    }
    if s.plan.sos is not None:
        fp_names = [b.name for b in g.boxes]
        doc["sos"] = {
            "order": [fp_names[i] for i in s.plan.sos.order],
            "peak_bytes": s.plan.sos.peak,
            "greedy_peak_bytes": s.plan.sos.greedy_peak,
            "proven": s.plan.sos.proven,
            "states": s.plan.sos.states,
        }
    if s.notes:
        doc["notes"] = list(s.notes)
    return doc


def dumps(s: Schedule) -> str:
    head = (
        f"# jitterscope pipeline schedule: {s.graph.name}, {s.options.heuristic} on {len(s.threads)} threads, "
        f"{s.memory.allocator} memory ({s.memory.total:,} B)\n"
    )

    class _Flow(yaml.SafeDumper):
        pass

    def lists(d: yaml.SafeDumper, v: list[Any]) -> Any:  # short lists on one line, as the appendix writes them
        return d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True)

    def dicts(d: yaml.SafeDumper, v: dict[str, Any]) -> Any:  # {tokens: 1, kind: WAR} on one line
        flow = len(v) <= 4 and all(isinstance(x, (int, float, str, bool)) or x is None for x in v.values())
        return d.represent_mapping("tag:yaml.org,2002:map", v.items(), flow_style=flow)

    _Flow.add_representer(list, lists)
    _Flow.add_representer(dict, dicts)
    return head + yaml.dump(to_dict(s), Dumper=_Flow, sort_keys=False, width=110)


def write(s: Schedule, path: Path) -> None:

    write_text(path, dumps(s))


def load(path: str | Path, graph: Graph) -> Schedule:
    """Read a schedule file for `graph`; one line and exit 2 for anything wrong."""
    p = Path(path)
    spec = load_config(p, ScheduleFile, "schedule file")
    return from_spec(spec, graph, str(p))


def from_spec(spec: ScheduleFile, graph: Graph, source: str) -> Schedule:
    if spec.format != FORMAT:
        raise ScheduleError(f"{source}: format must be {FORMAT!r}, got {spec.format!r}")
    if spec.version != VERSION:
        raise ScheduleError(f"{source}: version {spec.version}; this jitterscope reads version {VERSION}")
    if spec.graph.digest != graph.digest():
        raise ScheduleError(
            f"{source}: compiled for another graph ({spec.graph.name!r}, digest "
            f"{spec.graph.digest}); {graph.source} has digest {graph.digest()}: compile it again"
        )
    opts = _options(spec.options, source)
    inst = instantiate(graph, opts.parts)
    want = {x.name: x.region(graph.width) for x in inst.subboxes}
    if spec.subboxes != want:
        raise ScheduleError(f"{source}: subboxes do not match a split of {graph.name} into {opts.parts}")
    names = {x.name: x.index for x in inst.subboxes}
    threads, sigs = _threads(spec, names, source)
    n = len(inst.subboxes)
    start = [0.0] * n
    finish = [0.0] * n
    for name, (a, b) in ((k, v) for k, v in spec.simulated.items() if k in names and len(v) == 2):
        start[names[name]], finish[names[name]] = a, b
    plan = H.ThreadPlan(opts.heuristic, threads, start, finish, barrier=opts.heuristic == "barrier")
    mem = _memory(spec.memory, graph, source)
    signals = [Signal(nm, sigs[nm][0], sigs[nm][1], spec.signals[nm].tokens, spec.signals[nm].kind) for nm in sigs]
    index = {g.name: i for i, g in enumerate(signals)}
    ops = [
        [(k, names[x] if k == "E" else index[x]) for k, x in _parse_ops(spec.threads[t], t, source)]
        for t in spec.threads
    ]
    try:
        order = Order(n, threads, [(g.src, g.dst, g.tokens) for g in signals])
    except ValueError:
        raise ScheduleError(
            f"{source}: deadlock: the threads' orders and the signals without an initial token form a cycle"
        ) from None
    sched = Schedule(graph, inst, opts, plan, mem, Sync(signals, ops, order), list(spec.notes))
    verify(sched, source)
    return sched


def _options(d: dict[str, Any], source: str) -> Options:
    known = set(Options().as_dict())
    bad = sorted(set(d) - known)
    if bad:
        raise ScheduleError(f"{source}: options: unknown key {bad[0]!r} (expected: {', '.join(sorted(known))})")
    try:
        return Options(**d)
    except TypeError as err:
        raise ScheduleError(f"{source}: options: {err}") from None


def _parse_ops(ops: list[str], thread: str, source: str) -> list[tuple[str, str]]:
    out = []
    for i, text in enumerate(ops):
        m = OP_RE.match(str(text))
        if not m:
            raise ScheduleError(f"{source}: threads.{thread}[{i}]: {text!r} is not 'W s', 'E sub-box' or 'S s'")
        out.append((m.group(1), m.group(2)))
    return out


def _threads(
    spec: ScheduleFile, names: dict[str, int], source: str
) -> tuple[list[list[int]], dict[str, tuple[int, int]]]:
    """Sub-boxes per thread and each signal's (poster, waiter), from the W/E/S lists."""
    threads: list[list[int]] = []
    posters: dict[str, int] = {}
    waiters: dict[str, int] = {}
    for t, ops in spec.threads.items():
        subs: list[int] = []
        pending: list[str] = []  # waits before the next E
        for i, (kind, x) in enumerate(_parse_ops(ops, t, source)):
            where = f"{source}: threads.{t}[{i}]"
            if kind == "E":
                if x not in names:
                    raise ScheduleError(f"{where}: unknown sub-box {x!r}")
                subs.append(names[x])
                for sname in pending:
                    waiters[sname] = names[x]
                pending = []
                continue
            if x not in spec.signals:
                raise ScheduleError(f"{where}: signal {x!r} is not declared under signals")
            if kind == "W":
                if x in waiters or x in pending:
                    raise ScheduleError(f"{where}: signal {x} is waited for twice (one waiter per signal)")
                pending.append(x)
            else:
                if not subs:
                    raise ScheduleError(f"{where}: S {x} comes before any E (post after the sub-box it follows)")
                if x in posters:
                    raise ScheduleError(f"{where}: signal {x} is posted twice (one poster per signal)")
                posters[x] = subs[-1]
        if pending:
            raise ScheduleError(f"{source}: threads.{t}: W {pending[0]} is not followed by an E")
        threads.append(subs)
    for sname in spec.signals:
        if sname not in posters or sname not in waiters:
            never = "never posted" if sname not in posters else "never waited for"
            raise ScheduleError(f"{source}: signals.{sname} is {never}")
    return threads, {s: (posters[s], waiters[s]) for s in spec.signals}


def _memory(m: MemorySpec, graph: Graph, source: str) -> MemoryMap:
    idx = {b.name: b.index for b in graph.buffers}
    missing = [b.name for b in graph.buffers if b.name not in m.buffers]
    if missing:
        raise ScheduleError(f"{source}: memory.buffers: no range for {missing[0]}")
    extra = sorted(set(m.buffers) - set(idx))
    if extra:
        raise ScheduleError(f"{source}: memory.buffers.{extra[0]}: not an output port of the graph")
    offsets = [m.buffers[b.name][0] for b in graph.buffers]
    sizes = [m.buffers[b.name][1] - m.buffers[b.name][0] for b in graph.buffers]
    return MemoryMap(m.allocator, offsets, sizes, m.total, [idx[k] for k in m.buffers])
