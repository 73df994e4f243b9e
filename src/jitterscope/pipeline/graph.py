"""The box graph file (YAML): structure of a streaming pipeline, validated like every config file.

    name: appendix
    image: {width: 256, height: 256, pixel: int32}
    timing: {source: 1300, gain: 560, conv: 100, sink: 1}   # optional weights, per kernel or box
    boxes:
      f6: {kernel: gain}
      f7: {kernel: conv, size: 4}       # input footprint 4x4
      f8: {kernel: source}
      f9: {kernel: sink}
    edges:
      - f8.out -> f6.in
      - f6.out -> f7.in
      - f7.out -> f9.in

Each output port is one memory buffer, read by every input connected to it.
Structure errors (keys, types) are one line from config.py; graph errors
(unknown box or port, an input connected twice or never, a cycle, a footprint
that does not match the kernel) are one line naming the key, exit code 2.
Reference: docs/commands/pipeline.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StrictBool, StrictFloat, StrictInt

from jitterscope import boundedio
from jitterscope.config import ConfigModel, PositiveInt, parse_yaml, validate
from jitterscope.errors import UsageError
from jitterscope.pipeline import kernels as K

MAX_SIDE = 16384
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
EDGE_RE = re.compile(r"^\s*([A-Za-z_]\w*)(?:\.(\w+))?\s*->\s*([A-Za-z_]\w*)(?:\.(\w+))?\s*$")
Number = StrictInt | StrictFloat
PositiveNumber = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class GraphError(UsageError):
    """A graph that cannot be compiled: one line naming the file and the key."""


def _footprint(v: Any) -> Any:
    if isinstance(v, list) and len(v) == 2:
        return v
    raise ValueError(f"must be [width, height], got {v!r}")


class PortSpec(ConfigModel):
    name: str
    neighbourhood: Annotated[tuple[PositiveInt, PositiveInt], BeforeValidator(_footprint)] = (1, 1)


PortList = list[str | PortSpec]


class BoxSpec(ConfigModel):
    kernel: str
    parallel: StrictBool | None = None
    weight: PositiveNumber | None = None
    inputs: Annotated[int, Field(ge=1, le=K.MAX_PORTS)] | PortList | None = None
    outputs: Annotated[int, Field(ge=1, le=K.MAX_PORTS)] | PortList | None = None
    factor: Number | None = None
    offset: Number | None = None
    size: Annotated[int, Field(ge=1, le=K.MAX_CONV)] | None = None
    weights: list[StrictInt] | None = None
    divisor: StrictInt | None = None
    library: str | None = None
    symbol: str | None = None
    params: list[StrictInt] | None = Field(None, max_length=K.MAX_PARAMS)


class ImageSpec(ConfigModel):
    width: Annotated[int, Field(ge=1, le=MAX_SIDE)]
    height: Annotated[int, Field(ge=1, le=MAX_SIDE)]
    pixel: str = "int32"


class GraphFile(ConfigModel):
    """The graph file's keys (docs/commands/pipeline.md)."""

    name: str | None = None
    description: str | None = None
    image: ImageSpec
    timing: dict[str, PositiveNumber] | None = None
    boxes: dict[str, BoxSpec] = Field(min_length=1)
    edges: list[str] = Field(min_length=1)


@dataclass
class Box:
    name: str
    index: int
    spec: K.KernelSpec
    weight: float  # whole-box weight (timing annotation or the cost model)

    @property
    def kernel(self) -> str:
        return self.spec.kernel


@dataclass
class Buffer:
    """One output port's image, read by every input connected to it."""

    index: int
    box: str
    port: str
    readers: list[tuple[str, str]] = field(default_factory=list)  # (box, input port)

    @property
    def name(self) -> str:
        return f"{self.box}.{self.port}"


@dataclass
class Graph:
    name: str
    width: int
    height: int
    pixel: str
    boxes: list[Box]
    buffers: list[Buffer]
    inputs: dict[tuple[str, str], int]  # (box, input port) -> buffer index
    path: Path | None = None
    source: str = "graph"
    weighted: bool = False  # timing came from the file
    text: str = ""  # the graph file as given (a run keeps it as graph.yaml)

    @property
    def row_bytes(self) -> int:
        return self.width * K.PIXEL_BYTES

    @property
    def buffer_bytes(self) -> int:
        return self.row_bytes * self.height

    def box(self, name: str) -> Box:
        return self._by_name[name]

    def __post_init__(self) -> None:
        self._by_name = {b.name: b for b in self.boxes}

    def producers(self, box: str) -> list[str]:
        """Boxes whose outputs `box` reads, in input-port order."""
        b = self.box(box)
        return [self.buffers[self.inputs[(box, p.name)]].box for p in b.spec.inputs]

    def outputs(self, box: str) -> list[Buffer]:
        return [buf for buf in self.buffers if buf.box == box]

    def digest(self) -> str:
        """Hash of the structure (not of names in comments or of timing): a schedule is for this graph."""
        doc = {
            "image": [self.width, self.height, self.pixel],
            "boxes": [
                [
                    b.name,
                    b.kernel,
                    b.spec.parallel,
                    b.spec.params,
                    b.spec.conv,
                    b.spec.fparams,
                    [[p.name, list(p.footprint)] for p in b.spec.inputs],
                    [p.name for p in b.spec.outputs],
                    b.spec.library,
                    b.spec.symbol,
                ]
                for b in self.boxes
            ],
            "buffers": [[buf.name, sorted(buf.readers)] for buf in self.buffers],
        }
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def load_graph(path: str | Path) -> Graph:
    """Read and check a graph file; every problem is one line, exit code 2."""
    p = Path(path)
    text = boundedio.read_text(p, "graph file")
    spec = validate(parse_yaml(text, str(p)), GraphFile, str(p))
    g = build_graph(spec, str(p), p)
    g.text = text
    return g


def graph_from_dict(data: Any, source: str = "graph") -> Graph:
    import yaml

    g = build_graph(validate(data, GraphFile, source, error=GraphError), source, None)
    g.text = yaml.safe_dump(data, sort_keys=False, width=110)
    return g


def build_graph(spec: GraphFile, source: str, path: Path | None) -> Graph:
    pixel = K.PIXEL_ALIASES.get(spec.image.pixel, spec.image.pixel)
    if pixel not in K.PIXEL_TYPES:
        raise GraphError(f"{source}: image.pixel must be one of {', '.join(K.PIXEL_TYPES)}, got {spec.image.pixel!r}")
    timing = spec.timing or {}
    boxes: list[Box] = []
    for i, (name, b) in enumerate(spec.boxes.items()):
        if not NAME_RE.match(name):
            raise GraphError(f"{source}: boxes.{name}: a box name is letters, digits and _ (not starting with a digit)")
        ks = kernel_spec(b, f"{source}: boxes.{name}", pixel)
        pixels = spec.image.width * spec.image.height
        weight = b.weight or timing.get(name) or timing.get(ks.kernel) or ks.cost(pixels)
        boxes.append(Box(name, i, ks, float(weight)))
    unknown_timing = sorted(set(timing) - {b.name for b in boxes} - {b.kernel for b in boxes})
    if unknown_timing:
        raise GraphError(f"{source}: timing.{unknown_timing[0]}: names no box and no kernel of the graph")
    buffers, inputs = _connect(spec.edges, boxes, source)
    weighted = bool(timing) or any(b.weight for b in spec.boxes.values())
    g = Graph(
        spec.name or (path.stem if path else "graph"),
        spec.image.width,
        spec.image.height,
        pixel,
        boxes,
        buffers,
        inputs,
        path=path,
        source=source,
        weighted=weighted,
    )
    _check_acyclic(g, source)
    return g


def kernel_spec(b: BoxSpec, where: str, pixel: str) -> K.KernelSpec:
    """The kernel, its ports and parameters, checked against what the box declares."""
    kernel = b.kernel
    if kernel not in K.KERNEL_IDS:
        raise GraphError(f"{where}.kernel: unknown kernel {kernel!r} (kernels: {', '.join(K.KERNEL_IDS)})")
    given = {k for k in b.model_fields_set if k not in ("kernel", "parallel", "weight", "inputs", "outputs")}
    extra = sorted(given - K.KERNEL_OPTIONS[kernel])
    if extra:
        allowed = ", ".join(sorted(K.KERNEL_OPTIONS[kernel] | {"parallel", "weight", "inputs", "outputs"}))
        raise GraphError(f"{where}: unknown key {extra[0]!r} for a {kernel} box (options: {allowed})")
    parallel = K.default_parallel(kernel) if b.parallel is None else b.parallel
    if kernel == "sink" and parallel:
        raise GraphError(f"{where}.parallel: a sink checks whole frames and cannot be split")
    if kernel == "user":
        return _user_spec(b, where, parallel)
    counted = K.COUNTED.get(kernel)
    opts: K.KernelOptions = {"size": b.size or 3}
    for side in ("inputs", "outputs"):
        v = getattr(b, side)
        if isinstance(v, int):
            if side != counted:
                raise GraphError(
                    f"{where}.{side}: a {kernel} box has fixed {side}; give a list of ports to state their footprints"
                )
            opts[side] = v
        elif v is not None and side == counted:
            opts[side] = len(v)
    if counted and (opts.get("inputs", 2) if counted == "inputs" else opts.get("outputs", 2)) < 2:
        raise GraphError(f"{where}.{counted}: a {kernel} box needs at least 2")
    ins, outs = K.builtin_ports(kernel, opts)
    _match_ports(b.inputs, ins, f"{where}.inputs", kernel)
    _match_ports(b.outputs, outs, f"{where}.outputs", kernel)
    ks = K.KernelSpec(kernel, ins, outs, parallel)
    if kernel == "gain":
        _gain(ks, b, where, pixel)
    elif kernel == "conv":
        _conv(ks, b, where)
    return ks


def _match_ports(given: Any, ports: list[K.Port], where: str, kernel: str) -> None:
    """Ports declared for a built-in kernel must be its ports with its footprints."""
    if not isinstance(given, list):
        return
    names = [p.name for p in ports]
    if len(given) != len(ports):
        raise GraphError(
            f"{where}: a {kernel} box has {len(ports)} ({', '.join(names) or 'none'}), the box declares {len(given)}"
        )
    for i, (g, p) in enumerate(zip(given, ports)):
        gname = g if isinstance(g, str) else g.name
        fp = (1, 1) if isinstance(g, str) else tuple(g.neighbourhood)
        if gname != p.name:
            raise GraphError(f"{where}[{i}]: port {gname!r} of a {kernel} box is called {p.name!r}")
        if fp != p.footprint:
            raise GraphError(
                f"{where}[{i}]: footprint {list(fp)} does not match the {kernel} kernel's {list(p.footprint)}"
            )


def _gain(ks: K.KernelSpec, b: BoxSpec, where: str, pixel: str) -> None:
    factor = K.GAIN_DEFAULT[0] if b.factor is None else b.factor
    offset = K.GAIN_DEFAULT[1] if b.offset is None else b.offset
    if pixel == "int32":
        for key, v in (("factor", factor), ("offset", offset)):
            if not isinstance(v, int) or not -(2**31) <= v < 2**31:
                raise GraphError(f"{where}.{key}: an int32 image takes a 32-bit integer, got {v!r}")
        ks.params = [int(factor), int(offset)]
    else:
        ks.fparams = [float(factor), float(offset)]


def _conv(ks: K.KernelSpec, b: BoxSpec, where: str) -> None:
    n = ks.inputs[0].footprint[0]
    weights = b.weights if b.weights is not None else [1] * (n * n)
    if len(weights) != n * n:
        raise GraphError(f"{where}.weights: a {n}x{n} convolution takes {n * n} weights, got {len(weights)}")
    if any(not -(2**31) <= w < 2**31 for w in weights):
        raise GraphError(f"{where}.weights: weights must be 32-bit integers")
    divisor = b.divisor if b.divisor is not None else max(1, abs(sum(weights)))
    if divisor == 0:
        raise GraphError(f"{where}.divisor: must not be 0")
    ks.conv = [int(w) for w in weights] + [int(divisor)]


def _user_spec(b: BoxSpec, where: str, parallel: bool) -> K.KernelSpec:
    if not b.library or not b.symbol:
        raise GraphError(f"{where}: a user kernel needs library: (a shared object) and symbol: (its function)")
    if not isinstance(b.inputs, list) and b.inputs is not None or not isinstance(b.outputs, list):
        raise GraphError(f"{where}: a user kernel lists its ports: inputs: [...] and outputs: [...]")

    def ports(v: Any) -> list[K.Port]:
        return [K.Port(p) if isinstance(p, str) else K.Port(p.name, tuple(p.neighbourhood)) for p in (v or [])]

    ins, outs = ports(b.inputs), ports(b.outputs)
    names = [p.name for p in ins + outs]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise GraphError(f"{where}: port {dup!r} declared twice")
    if not outs:
        raise GraphError(f"{where}.outputs: a user kernel needs at least one output")
    return K.KernelSpec("user", ins, outs, parallel, params=list(b.params or []), library=b.library, symbol=b.symbol)


def _connect(edges: list[str], boxes: list[Box], source: str) -> tuple[list[Buffer], dict[tuple[str, str], int]]:
    by_name = {b.name: b for b in boxes}
    buffers: list[Buffer] = []
    by_port: dict[tuple[str, str], int] = {}
    inputs: dict[tuple[str, str], int] = {}
    for b in boxes:
        for p in b.spec.outputs:
            by_port[(b.name, p.name)] = len(buffers)
            buffers.append(Buffer(len(buffers), b.name, p.name))
    for i, text in enumerate(edges):
        where = f"{source}: edges[{i}]"
        m = EDGE_RE.match(text)
        if not m:
            raise GraphError(f"{where}: {text!r} is not 'box.port -> box.port'")
        src = _port(by_name, m.group(1), m.group(2), "outputs", where)
        dst = _port(by_name, m.group(3), m.group(4), "inputs", where)
        if dst in inputs:
            raise GraphError(f"{where}: input {dst[0]}.{dst[1]} is already connected")
        if src[0] == dst[0]:
            raise GraphError(f"{where}: connects box {src[0]!r} to itself (a cycle)")
        buffers[by_port[src]].readers.append(dst)
        inputs[dst] = by_port[src]
    for b in boxes:
        for p in b.spec.inputs:
            if (b.name, p.name) not in inputs:
                raise GraphError(f"{source}: edges: input {b.name}.{p.name} is not connected")
    for buf in buffers:
        if not buf.readers:
            raise GraphError(f"{source}: edges: output {buf.name} is not connected (end a branch with a sink)")
    return buffers, inputs


def _port(by_name: dict[str, Box], box: str, port: str | None, side: str, where: str) -> tuple[str, str]:
    if box not in by_name:
        raise GraphError(f"{where}: unknown box {box!r} (boxes: {', '.join(by_name)})")
    ports = [p.name for p in getattr(by_name[box].spec, side)]
    if port is None:
        if len(ports) != 1:
            raise GraphError(
                f"{where}: box {box!r} has {len(ports)} {side} ({', '.join(ports) or 'none'}); name the port"
            )
        return box, ports[0]
    if port not in ports:
        raise GraphError(
            f"{where}: box {box!r} ({by_name[box].kernel}) has no {side[:-1]} {port!r} "
            f"({side}: {', '.join(ports) or 'none'})"
        )
    return box, port


def _check_acyclic(g: Graph, source: str) -> None:
    ts: TopologicalSorter[str] = TopologicalSorter({b.name: g.producers(b.name) for b in g.boxes})
    try:
        ts.prepare()
    except CycleError as err:
        cycle = err.args[1]
        raise GraphError(
            f"{source}: edges: the graph has a cycle ({' -> '.join(cycle)}); a streaming graph must be acyclic"
        ) from None


def topological(g: Graph) -> list[str]:
    """Boxes in a deterministic topological order (declaration order among the ready ones)."""
    preds = {b.name: set(g.producers(b.name)) for b in g.boxes}
    done: list[str] = []
    left = [b.name for b in g.boxes]
    while left:
        nxt = next(n for n in left if preds[n] <= set(done))
        done.append(nxt)
        left.remove(nxt)
    return done
