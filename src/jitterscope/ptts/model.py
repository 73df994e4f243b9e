"""The PTTS model file: a chain of time-triggered components (the thesis, section 5.3).

    resolution: 1ms
    components:
      - {name: sensor,  period: 200ms, offset: 0ms,  etp: {uniform: [50ms, 149ms]}}
      - {name: process, period: 58ms,  offset: 30ms, etp: {uniform: [25ms, 54ms]}}
      - {name: display, period: 56ms,  offset: 8ms,  etp: {pmf: {5ms: 1.0}}}

Every time is held as a whole number of *ticks* of the resolution (Python ints,
exact: `66.66ms` at `0.01ms` is 6666 ticks, with no floating point on the way).
A time that is not a whole number of ticks is an error, never rounded.

Errors are one line naming the component and the field, exit code 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from jitterscope.config import ConfigModel, read_yaml, validate
from jitterscope.errors import JitterscopeError
from jitterscope.humanize import seconds
from jitterscope.ptts.etp import (
    ETP,
    TIME_RE,
    UNIT_NAMES,
    UNITS_NS,
    EtpSpec,
    ModelError,
    given_profile,
    parse_time_ns,
    resolve_path,
    to_ticks,
)
from jitterscope.ptts.etp_run import etp_from_run

# Largest hyper-period (in ticks) the engine accepts: class indices and times
# stay below 2**62 so sums of a time and a delay never overflow int64.
MAX_TICKS = 2**62


@dataclass
class Component:
    name: str
    period: int  # ticks
    offset: int  # ticks, as given (the analysis uses it modulo the period)
    etp: ETP


@dataclass
class Model:
    resolution_ns: Fraction
    unit: str  # display unit for times (the resolution's unit)
    components: list[Component]
    path: Path | None = None
    name: str = ""

    @property
    def unit_ns(self) -> Fraction:
        return UNITS_NS[self.unit]

    def ticks_to_unit(self, ticks: Any) -> Any:
        """Ticks (int, float or array) to the model's unit as floats."""
        r = self.resolution_ns / self.unit_ns
        if isinstance(ticks, np.ndarray):
            decimals = 0 if r >= 1 else math.ceil(-math.log10(float(r)) - 1e-9)
            out = ticks.astype(np.float64) * float(r)
            if r.denominator == 1 or (10**decimals * r).denominator == 1:
                out = np.round(out, decimals)  # 6666 * 0.01 is 66.66, not 66.66000000000001
            return out
        if isinstance(ticks, (int, np.integer)):
            return float(int(ticks) * r)  # exact, then the nearest float: 66.66, not 66.66000000000001
        return float(f"{float(ticks) * float(r):.12g}")

    def fmt(self, ticks: float, digits: int = 6) -> str:
        return f"{self.ticks_to_unit(ticks):.{digits}g} {self.unit}"

    def fmt_long(self, ticks: int) -> str:
        """A long span exactly, with thousands separators and a human-scale note: 92,564,809.26 ms (25.7 h)."""
        r = self.resolution_ns / self.unit_ns
        decimals = 0 if r >= 1 else math.ceil(-math.log10(float(r)) - 1e-9)
        text = f"{float(int(ticks) * r):,.{decimals}f} {self.unit}"
        secs = float(int(ticks) * self.resolution_ns) / 1e9
        if secs >= 60:
            text += f" ({seconds(secs)})"
        return text

    def parse_time(self, text: Any, where: str) -> int:
        """A user time (`12ms`, or a bare number in the model's unit) in ticks."""
        return to_ticks(parse_time_ns(text, where, self.unit), self.resolution_ns, where)

    @property
    def periods(self) -> list[int]:
        return [c.period for c in self.components]

    def hyperperiod(self) -> int:
        return math.lcm(*self.periods)

    def trees(self) -> int:
        return self.hyperperiod() // self.components[0].period

    def with_component(self, index: int, **changes: Any) -> Model:
        comps = list(self.components)
        comps[index] = replace(comps[index], **changes)
        m = replace(self, components=comps)
        check_hyperperiod(m)
        return m

    def with_periods(self, periods: list[int]) -> Model:
        comps = [replace(c, period=int(p)) for c, p in zip(self.components, periods)]
        return replace(self, components=comps)

    def component_index(self, name: str) -> int:
        for i, c in enumerate(self.components):
            if c.name == name:
                return i
        raise ModelError(f"no component named {name!r} (components: {', '.join(c.name for c in self.components)})")


def check_hyperperiod(model: Model) -> None:
    h = 1
    for c in model.components:
        h = math.lcm(h, c.period)
        if h >= MAX_TICKS:
            raise ModelError(
                f"component {c.name!r}: field period: the hyper-period (lcm of the periods up to here) is "
                f"{h} ticks, beyond what fits (2^62 ticks); use a coarser resolution or rounder periods"
            )


class ComponentSpec(ConfigModel):
    name: str = Field(min_length=1)
    period: Any  # a time; turned into ticks once the resolution is known
    offset: Any = "0ns"
    etp: EtpSpec


class ModelFile(ConfigModel):
    """The model file's keys (docs/commands/ptts.md)."""

    resolution: Any
    unit: str | None = None
    components: list[ComponentSpec] = Field(min_length=1)
    name: str | None = None
    description: str | None = None


def _resolution_unit(text: Any) -> str:
    m = TIME_RE.match(str(text))
    unit = (m.group(2) if m else "") or "ms"
    return "us" if unit == "µs" else unit


def load_model(path: str | Path) -> Model:
    """Read and check a model file; every problem is a one-line ModelError."""
    p = Path(path)
    try:
        data = read_yaml(p, "model file")
    except ModelError:
        raise
    except JitterscopeError as err:
        raise ModelError(str(err)) from None
    return model_from_dict(data, base_dir=p.parent, path=p)


def model_from_dict(data: Any, base_dir: Path | None = None, path: Path | None = None) -> Model:
    spec = validate(data, ModelFile, str(path) if path else "model", error=ModelError)
    res_ns = parse_time_ns(spec.resolution, "field resolution")
    if res_ns <= 0:
        raise ModelError("field resolution: must be positive")
    unit = _resolution_unit(spec.resolution)
    if spec.unit is not None:
        unit = "us" if spec.unit == "µs" else spec.unit
        if unit not in UNITS_NS:
            raise ModelError(f"field unit: unknown unit {spec.unit!r} (use {UNIT_NAMES})")
    model = Model(res_ns, unit, [], path=path, name=spec.name or (path.stem if path else "model"))
    seen: set[str] = set()
    for c in spec.components:
        label = f"component {c.name!r}"
        if c.name in seen:
            raise ModelError(f"{label}: field name: duplicate component name")
        seen.add(c.name)
        period = to_ticks(parse_time_ns(c.period, f"{label}: field period"), res_ns, f"{label}: field period")
        if period <= 0:
            raise ModelError(f"{label}: field period must be positive")
        offset = to_ticks(parse_time_ns(c.offset, f"{label}: field offset"), res_ns, f"{label}: field offset")
        etp = parse_etp(c.etp, res_ns, label, base_dir or Path("."))
        model.components.append(Component(c.name, period, offset, etp))
    check_hyperperiod(model)
    return model


def parse_etp(spec: EtpSpec | Any, res_ns: Fraction, label: str, base_dir: Path) -> ETP:
    """A component's profile, from its `etp:` entry (paths relative to the model file's directory)."""
    where = f"{label}: field etp"
    if not isinstance(spec, EtpSpec):
        spec = validate(spec, EtpSpec, where, error=ModelError)
    if spec.kind == "run":
        d = resolve_path(base_dir, spec.run, f"{where}.run")
        return etp_from_run(d, spec, res_ns, where)
    return given_profile(spec, res_ns, where, base_dir)
