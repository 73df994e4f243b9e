"""The experiment plan (YAML), validated completely before anything changes.

See docs/commands/doe.md for the reference.  Every mistake is one line naming
the field; nothing on the machine is touched while the plan is read.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jitterscope import sysinfo
from jitterscope.doe import factors as fx
from jitterscope.doe.design import LETTERS, Design, parse_generator
from jitterscope.doe.response import CommandResponse, MeasureResponse
from jitterscope.errors import JitterscopeError
from jitterscope.units import parse_cpulist, parse_duration_s

TOP_KEYS = {"name", "response", "factors", "replications", "design", "seed", "confidence",
            "budget", "settle", "log", "groups_by", "description"}
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
        return (self.response.estimate_s() + self.settle_s + 0.05
                + sum(f.setup_s for f in self.factors))

    def estimate_s(self) -> float:
        return self.runs * self.run_estimate_s()

    def context(self) -> fx.Context:
        # A load outlives its run by a wide margin only if the run hangs; then it still stops.
        return fx.Context(cpus=self.cpus, online=sysinfo.online_cpus(),
                          load_seconds=min(3600.0, 3 * self.run_estimate_s() + 60))


def _need(d: dict[str, Any], key: str, where: str) -> Any:
    if key not in d or d[key] is None:
        raise JitterscopeError(f"plan: {where} needs {key}:")
    return d[key]


def _cpus(v: Any, where: str) -> list[int]:
    cpus = parse_cpulist(str(v))
    sysinfo.check_cpus(cpus)
    return cpus


def _response(d: Any) -> MeasureResponse | CommandResponse:
    if not isinstance(d, dict) or not d:
        raise JitterscopeError("plan has no response: give response: with measure: or command:")
    if "measure" in d and "command" in d:
        raise JitterscopeError("plan: response takes either measure: or command:, not both")
    if "measure" in d:
        m = d["measure"]
        if not isinstance(m, dict):
            raise JitterscopeError("plan: response.measure must be a mapping (cpus, duration, metric)")
        unknown = set(m) - {"cpus", "duration", "metric", "source", "threshold"}
        if unknown:
            raise JitterscopeError(f"plan: response.measure: unknown key {sorted(unknown)[0]!r}")
        cpus = _cpus(m.get("cpus", ",".join(map(str, sysinfo.default_cpus()))), "response.measure")
        dur = parse_duration_s(m.get("duration", "2s"), what="response.measure.duration")
        metric = str(m.get("metric", "noise_ppm"))
        source = m.get("source")
        if metric.startswith("total_ns:"):
            metric, source = "total_ns", metric.split(":", 1)[1]
        if metric not in ("noise_ppm", "max_ns", "total_ns"):
            raise JitterscopeError(f"plan: response.measure.metric {metric!r}: use noise_ppm, max_ns or "
                                   f"total_ns with source: kind:name")
        if metric == "total_ns" and (not source or ":" not in str(source)):
            raise JitterscopeError("plan: metric total_ns needs source: kind:name, e.g. irq:local_timer")
        return MeasureResponse(cpus, dur, metric, str(source) if source else None,
                               str(m["threshold"]) if m.get("threshold") else None)
    if "command" in d:
        cmd = d["command"]
        if isinstance(cmd, list):
            if not cmd or not all(isinstance(c, (str, int, float)) for c in cmd):
                raise JitterscopeError("plan: response.command must be a non-empty list of words or a string")
            cmd = [str(c) for c in cmd]
        elif not isinstance(cmd, str) or not cmd.strip():
            raise JitterscopeError("plan: response.command must be a non-empty list of words or a string")
        unknown = set(d) - {"command", "cpus", "value", "pattern", "timeout", "estimate"}
        if unknown:
            raise JitterscopeError(f"plan: response: unknown key {sorted(unknown)[0]!r}")
        cpus = _cpus(d.get("cpus", ",".join(map(str, sysinfo.default_cpus()))), "response")
        value = str(d.get("value", "wall_time"))
        if value not in ("wall_time", "stdout"):
            raise JitterscopeError(f"plan: response.value {value!r}: use wall_time or stdout")
        timeout = parse_duration_s(d.get("timeout", "10min"), what="response.timeout")
        est = parse_duration_s(d["estimate"], what="response.estimate") if d.get("estimate") else None
        return CommandResponse(cmd, cpus, value, d.get("pattern"), timeout, est)
    raise JitterscopeError("plan has no response: give response: with measure: or command:")


def _factors(items: Any) -> list[fx.Factor]:
    if not isinstance(items, list) or not items:
        raise JitterscopeError("plan: factors: must be a non-empty list")
    out: list[fx.Factor] = []
    seen: set[str] = set()
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise JitterscopeError(f"plan: factor {i + 1} must be a mapping with name, kind, low, high")
        name = str(_need(it, "name", f"factor {i + 1}"))
        if name.lower() in seen:
            raise JitterscopeError(f"plan: duplicate factor name {name!r}")
        seen.add(name.lower())
        kind = str(_need(it, "kind", f"factor {name!r}"))
        if "low" not in it or "high" not in it:
            raise JitterscopeError(f"plan: factor {name!r} needs low: and high:")
        params = {k: v for k, v in it.items() if k not in ("name", "kind", "low", "high")}
        out.append(fx.make(name, kind, it["low"], it["high"], params))
    if len(out) > MAX_FACTORS:
        raise JitterscopeError(f"plan: {len(out)} factors; at most {MAX_FACTORS} (use a fractional design)")
    for f, letter in zip(out, LETTERS):
        f.letter = letter
    return out


def _design(d: Any, k: int) -> Design:
    if d is None or d == "full":
        return Design(k)
    if isinstance(d, str):
        d = {"type": d}
    if not isinstance(d, dict):
        raise JitterscopeError("plan: design: is full or a mapping {type: fractional, generators: [D=ABC]}")
    kind = str(d.get("type", "fractional" if d.get("generators") else "full"))
    if kind == "full":
        return Design(k)
    if kind != "fractional":
        raise JitterscopeError(f"plan: design type {kind!r}: use full or fractional")
    gens = d.get("generators")
    if not isinstance(gens, list) or not gens:
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
    if "resolution" in d and d["resolution"] is not None:
        roman_ = {"II": 2, "III": 3, "IV": 4, "V": 5, "VI": 6, "VII": 7, "VIII": 8}
        r = str(d["resolution"]).strip().upper()
        if not (r.isdigit() or r in roman_):
            raise JitterscopeError(f"plan: design resolution {d['resolution']!r}: use III, IV, V or a number")
        want = int(r) if r.isdigit() else roman_[r]
        got = design.resolution()
        if got is None or got < want:
            raise JitterscopeError(f"plan: the generators give resolution {got}, below the {want} asked for")
    return design


def parse_plan(text: str, name: str = "plan") -> Plan:
    try:
        d = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise JitterscopeError(f"plan is not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    if not isinstance(d, dict):
        raise JitterscopeError("plan must be a YAML mapping (response, factors, replications, ...)")
    unknown = set(d) - TOP_KEYS
    if unknown:
        raise JitterscopeError(f"plan: unknown key {sorted(unknown)[0]!r}; known: {', '.join(sorted(TOP_KEYS))}")
    if "response" not in d:
        raise JitterscopeError("plan has no response: give response: with measure: or command:")
    response = _response(d["response"])
    factors = _factors(d.get("factors"))
    design = _design(d.get("design"), len(factors))
    reps = d.get("replications", 3)
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise JitterscopeError(f"plan: replications must be a positive integer, not {reps!r}")
    seed = d.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise JitterscopeError(f"plan: seed must be an integer, not {seed!r}")
    conf = float(d.get("confidence", 0.95))
    if not 0.5 <= conf < 1:
        raise JitterscopeError(f"plan: confidence {conf} must be in [0.5, 1)")
    groups_by = d.get("groups_by")
    if groups_by is not None:
        names = {f.name: f.letter for f in factors} | {f.letter: f.letter for f in factors}
        if not isinstance(groups_by, list) or not all(str(g) in names for g in groups_by):
            raise JitterscopeError("plan: groups_by must list factor names or letters")
        groups_by = [names[str(g)] for g in groups_by]
    plan = Plan(
        name=str(d.get("name", name)), text=text, response=response, factors=factors, design=design,
        replications=reps, seed=seed, confidence=conf,
        budget_s=parse_duration_s(d.get("budget", "10min"), what="budget"),
        settle_s=parse_duration_s(d.get("settle", "200ms"), what="settle", allow_zero=True),
        log=bool(d.get("log", False)), groups_by=groups_by, description=str(d.get("description", "")),
    )
    return plan


def check_machine(plan: Plan) -> None:
    """Every factor says now whether this machine can apply its levels (nothing is changed)."""
    ctx = plan.context()
    for f in plan.factors:
        f.check(ctx)
    if sum(1 for f in plan.factors if f.kind == "fifo") > 1:
        raise JitterscopeError("plan: only one fifo factor can set the workload's priority")


def load_plan(path: Path) -> Plan:
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise JitterscopeError(f"cannot read plan {path}: {err.strerror}") from None
    return parse_plan(text, Path(path).stem)
