"""The experiment plan (YAML), validated completely before anything changes.

See docs/commands/doe.md for the reference.  Every mistake is one line naming
the field; nothing on the machine is touched while the plan is read.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from jitterscope import boundedio, sysinfo
from jitterscope.config import (
    ConfigModel,
    CpuList,
    Duration,
    DurationOrZero,
    OpenModel,
    PositiveInt,
    Seed,
    duration_like,
    parse_yaml,
    validate,
)
from jitterscope.doe import factors as fx
from jitterscope.doe.design import LETTERS, Design, parse_generator
from jitterscope.doe.response import CommandResponse, MeasureResponse
from jitterscope.errors import JitterscopeError

MAX_FACTORS = 12


@dataclass
class Plan:
    name: str
    text: str
    response: MeasureResponse | CommandResponse
    factors: list[fx.Factor]
    design: Design
    replications: int
    seed: int
    confidence: float = 0.95
    budget_s: float = 600.0
    settle_s: float = 0.2
    log: bool = False
    groups_by: list[str] | None = None
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cpus(self) -> list[int]:
        return self.response.cpus

    @property
    def runs(self) -> int:
        return self.design.n * self.replications

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    def run_estimate_s(self) -> float:
        """Seconds one run takes: apply factors, settle, respond, undo."""
        return self.response.estimate_s() + self.settle_s + 0.05 + sum(f.setup_s for f in self.factors)

    def estimate_s(self) -> float:
        return self.runs * self.run_estimate_s()

    def context(self) -> fx.Context:
        # A load outlives its run by a wide margin only if the run hangs; then it still stops.
        return fx.Context(
            cpus=self.cpus, online=sysinfo.online_cpus(), load_seconds=min(3600.0, 3 * self.run_estimate_s() + 60)
        )


class MeasureSpec(ConfigModel):
    cpus: CpuList | None = None
    duration: duration_like("--duration") = 2.0  # type: ignore[valid-type]  # bounded like measure --duration
    metric: str = "noise_ppm"
    source: str | None = None
    threshold: str | int | float | None = None


class ResponseSpec(ConfigModel):
    measure: MeasureSpec | None = None
    command: list[str | int | float] | str | None = None
    cpus: CpuList | None = None
    value: str = "wall_time"
    pattern: str | None = None
    timeout: Duration = 600.0
    estimate: Duration | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ResponseSpec:
        if self.measure is not None and self.command is not None:
            raise ValueError("takes either measure: or command:, not both")
        if self.measure is None and self.command is None:
            raise ValueError("needs measure: or command:")
        if self.measure is not None:
            stray = sorted(self.model_fields_set - {"measure"})
            if stray:
                raise ValueError(
                    f"{stray[0]}: applies to command: only (measure: takes cpus, duration, metric, source, threshold)"
                )
        elif (
            isinstance(self.command, list)
            and not self.command
            or isinstance(self.command, str)
            and not self.command.strip()
        ):
            raise ValueError("command: must be a non-empty list of words or a string")
        return self


class FactorSpec(OpenModel):
    """A factor; keys beyond these four are its kind's settings, checked by the kind (doe/factors.py)."""

    name: str | int
    kind: str
    low: Any
    high: Any


class DesignSpec(ConfigModel):
    type: str | None = None
    generators: list[str] | None = None
    resolution: str | int | None = None


def _design_text(v: Any) -> Any:
    return {"type": v} if isinstance(v, str) else v


class PlanFile(ConfigModel):
    """The plan file's keys (docs/commands/doe.md)."""

    name: str | None = None
    description: str = ""
    response: ResponseSpec
    factors: list[FactorSpec] = Field(min_length=1)
    design: Annotated[DesignSpec | None, BeforeValidator(_design_text)] = None
    replications: PositiveInt = 3
    seed: Seed = 1
    confidence: float = Field(0.95, ge=0.5, lt=1)
    budget: Duration = 600.0
    settle: DurationOrZero = 0.2
    log: bool = False
    groups_by: list[str | int] | None = None

    @model_validator(mode="before")
    @classmethod
    def _has_response(cls, d: Any) -> Any:
        if not isinstance(d, dict):
            raise ValueError("a plan is a YAML mapping (response, factors, replications, ...)")
        if not d.get("response"):
            raise ValueError("no response: give response: with measure: or command:")
        return d


def _response(r: ResponseSpec) -> MeasureResponse | CommandResponse:
    if r.measure is not None:
        m = r.measure
        cpus = m.cpus if m.cpus is not None else sysinfo.default_cpus()
        sysinfo.check_cpus(cpus)
        metric, source = m.metric, m.source
        if metric.startswith("total_ns:"):
            metric, source = "total_ns", metric.split(":", 1)[1]
        if metric not in ("noise_ppm", "max_ns", "total_ns"):
            raise JitterscopeError(
                f"plan: response.measure.metric {metric!r}: use noise_ppm, max_ns or total_ns with source: kind:name"
            )
        if metric == "total_ns" and (not source or ":" not in str(source)):
            raise JitterscopeError("plan: metric total_ns needs source: kind:name, e.g. irq:local_timer")
        return MeasureResponse(
            cpus, m.duration, metric, str(source) if source else None, str(m.threshold) if m.threshold else None
        )
    cmd = [str(c) for c in r.command] if isinstance(r.command, list) else str(r.command)
    cpus = r.cpus if r.cpus is not None else sysinfo.default_cpus()
    sysinfo.check_cpus(cpus)
    if r.value not in ("wall_time", "stdout"):
        raise JitterscopeError(f"plan: response.value {r.value!r}: use wall_time or stdout")
    return CommandResponse(cmd, cpus, r.value, r.pattern, r.timeout, r.estimate)


def _factors(items: list[FactorSpec]) -> list[fx.Factor]:
    out: list[fx.Factor] = []
    seen: set[str] = set()
    for it in items:
        name = str(it.name)
        if name.lower() in seen:
            raise JitterscopeError(f"plan: duplicate factor name {name!r}")
        seen.add(name.lower())
        out.append(fx.make(name, it.kind, it.low, it.high, dict(it.model_extra or {})))
    if len(out) > MAX_FACTORS:
        raise JitterscopeError(f"plan: {len(out)} factors; at most {MAX_FACTORS} (use a fractional design)")
    for f, letter in zip(out, LETTERS):
        f.letter = letter
    return out


def _design(d: DesignSpec | None, k: int) -> Design:
    if d is None:
        return Design(k)
    kind = d.type or ("fractional" if d.generators else "full")
    if kind == "full":
        return Design(k)
    if kind != "fractional":
        raise JitterscopeError(f"plan: design type {kind!r}: use full or fractional")
    gens = d.generators
    if not gens:
        raise JitterscopeError("plan: a fractional design needs generators: e.g. [D=ABC]")
    p = len(gens)
    if p >= k:
        raise JitterscopeError(f"plan: {p} generators for {k} factors leaves no base factor")
    parsed = [parse_generator(g, k, p) for g in gens]
    if len({g.factor for g in parsed}) != p:
        raise JitterscopeError("plan: each generated factor needs exactly one generator")
    design = Design(k, parsed)
    lv = design.levels()
    for g in parsed:  # generators that alias two main effects make the design useless
        col = lv[:, LETTERS.index(g.factor)]
        for j in range(k):
            if LETTERS[j] != g.factor and (abs(int((lv[:, j] * col).sum())) == design.n):
                raise JitterscopeError(f"plan: generator {g} confounds {g.factor} with {LETTERS[j]}")
    if d.resolution is not None:
        roman_ = {"II": 2, "III": 3, "IV": 4, "V": 5, "VI": 6, "VII": 7, "VIII": 8}
        r = str(d.resolution).strip().upper()
        if not (r.isdigit() or r in roman_):
            raise JitterscopeError(f"plan: design resolution {d.resolution!r}: use III, IV, V or a number")
        want = int(r) if r.isdigit() else roman_[r]
        got = design.resolution()
        if got is None or got < want:
            raise JitterscopeError(f"plan: the generators give resolution {got}, below the {want} asked for")
    return design


def parse_plan(text: str, name: str = "plan", source: str = "plan") -> Plan:
    """A checked Plan from the plan file's text; every mistake is one line starting `source: `."""
    d = validate(parse_yaml(text, source), PlanFile, source)
    response = _response(d.response)
    factors = _factors(d.factors)
    design = _design(d.design, len(factors))
    groups_by = None
    if d.groups_by is not None:
        names = {f.name: f.letter for f in factors} | {f.letter: f.letter for f in factors}
        if not all(str(g) in names for g in d.groups_by):
            raise JitterscopeError("plan: groups_by must list factor names or letters")
        groups_by = [names[str(g)] for g in d.groups_by]
    return Plan(
        name=d.name or name,
        text=text,
        response=response,
        factors=factors,
        design=design,
        replications=d.replications,
        seed=d.seed,
        confidence=d.confidence,
        budget_s=d.budget,
        settle_s=d.settle,
        log=d.log,
        groups_by=groups_by,
        description=d.description,
    )


def check_machine(plan: Plan) -> None:
    """Every factor says now whether this machine can apply its levels (nothing is changed)."""
    ctx = plan.context()
    for f in plan.factors:
        f.check(ctx)
    if sum(1 for f in plan.factors if f.kind == "fifo") > 1:
        raise JitterscopeError("plan: only one fifo factor can set the workload's priority")


def load_plan(path: Path) -> Plan:
    text = boundedio.read_text(path, "plan")
    return parse_plan(text, Path(path).stem, str(path))
