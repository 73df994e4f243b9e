"""Parse a noise SPEC: a distribution of the per-phase delay, a periodic signature,
a run directory (trace-driven) or `fit:RUN` (the best fit of a run's delays).

    normal(mean=1.91ms, sd=0.36ms)      lognormal(median=1ms, sigma=0.5)
    exponential(mean=50us)              gamma(shape=2, scale=1ms)
    weibull(shape=0.8, scale=1ms)       pareto(alpha=2.5, scale=100us)   (Pareto I: >= scale)
    uniform(low=0us, high=200us)        bernoulli(p=0.01, delay=2ms)
    periodic(period=10ms, duration=25us)
    runs/quiet                          fit:runs/quiet

Durations need a unit (a silent guess between s and ns is a factor of 10^9).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, create_model, model_validator

from jitterscope.config import ConfigModel, validate
from jitterscope.errors import UsageError
from jitterscope.simulate import distributions as D
from jitterscope.units import parse_duration_s

# family -> accepted parameter sets (first listed is the canonical one)
_PARAM_SETS: dict[str, list[tuple[str, ...]]] = {
    "normal": [("mean", "sd")],
    "lognormal": [("median", "sigma"), ("mean", "sd")],
    "exponential": [("mean",)],
    "gamma": [("shape", "scale"), ("shape", "mean"), ("mean", "sd")],
    "weibull": [("shape", "scale")],
    "pareto": [("alpha", "scale")],
    "uniform": [("low", "high")],
    "bernoulli": [("p", "delay")],
    "periodic": [("period", "duration")],
}
_DIMENSIONLESS = {"sigma", "shape", "alpha", "p"}
_ZERO_OK = {"mean", "low"}  # a normal delay may be centred on 0 (only sd spreads it); a uniform start at 0
FAMILIES = tuple(_PARAM_SETS)


@dataclass(frozen=True)
class DistributionNoise:
    """I.i.d. per-phase delays from `delay` (seconds)."""

    delay: D.Delay
    text: str


@dataclass(frozen=True)
class PeriodicNoise:
    """A detour of `duration_s` every `period_s` on every node."""

    period_s: float
    duration_s: float
    text: str


@dataclass(frozen=True)
class TraceNoise:
    """Replay a run directory's measured noise timeline."""

    path: Path
    text: str


@dataclass(frozen=True)
class FitNoise:
    """The best-fitting distribution of a run's per-phase delays."""

    path: Path
    text: str


NoiseSpec = DistributionNoise | PeriodicNoise | TraceNoise | FitNoise

_CALL = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*\((.*)\)\s*$")


def parse_noise(text: str) -> NoiseSpec:
    """A NoiseSpec from --noise text, or a one-line UsageError."""
    text = str(text).strip()
    if not text:
        raise UsageError(
            "empty --noise: give a distribution like normal(mean=1.91ms,sd=0.36ms), "
            "periodic(...), a run directory or fit:RUN"
        )
    if text.startswith("fit:"):
        path = Path(text[4:])
        if not text[4:]:
            raise UsageError("--noise fit: needs a run directory, e.g. fit:runs/quiet")
        return FitNoise(path, text)
    m = _CALL.match(text)
    if m:
        family = m.group(1).lower()
        params = _parse_params(family, m.group(2), text)
        return _build(family, params, text)
    if re.fullmatch(r"[A-Za-z_]+", text) and not Path(text).exists():
        if text.lower() in _PARAM_SETS:
            raise UsageError(f"--noise {text}: give its parameters, e.g. {_example(text.lower())}")
        raise UsageError(f"unknown noise family {text!r}: use one of {', '.join(FAMILIES)}, a run directory or fit:RUN")
    return TraceNoise(Path(text), text)


def _example(family: str) -> str:
    return {
        "normal": "normal(mean=1.91ms,sd=0.36ms)",
        "lognormal": "lognormal(median=1ms,sigma=0.5)",
        "exponential": "exponential(mean=50us)",
        "gamma": "gamma(shape=2,scale=1ms)",
        "weibull": "weibull(shape=0.8,scale=1ms)",
        "pareto": "pareto(alpha=2.5,scale=100us)",
        "uniform": "uniform(low=0us,high=200us)",
        "bernoulli": "bernoulli(p=0.01,delay=2ms)",
        "periodic": "periodic(period=10ms,duration=25us)",
    }[family]


def _parse_params(family: str, body: str, text: str) -> dict[str, float]:
    if family not in _PARAM_SETS:
        raise UsageError(f"unknown noise family {family!r} in {text!r}: use one of {', '.join(FAMILIES)}")
    raw: dict[str, str] = {}
    for part in [p for p in body.split(",") if p.strip()]:
        if "=" not in part:
            raise UsageError(
                f"malformed parameter {part.strip()!r} in {text!r}: use name=value, e.g. {_example(family)}"
            )
        key, value = (s.strip() for s in part.split("=", 1))
        if key.lower() in raw:
            raise UsageError(f"parameter {key.lower()!r} given twice in {text!r}")
        raw[key.lower()] = value
    params = validate(raw, _params_model(family), f"--noise {text!r}", error=UsageError)
    return {k: v for k, v in params.model_dump().items() if v is not None}


def _describe_sets(family: str) -> str:
    return " or ".join("(" + ", ".join(ps) + ")" for ps in _PARAM_SETS[family])


def _plain_number(v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"must be a plain number (no unit), got {v!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"must be positive, got {v!r}")
    return x


def _probability(v: Any) -> float:
    x = _plain_number(v)
    if x > 1:
        raise ValueError(f"is a probability: 0 < p <= 1, got {v!r}")
    return x


def _time(allow_zero: bool) -> Any:
    def parse(v: Any) -> float:
        if str(v).strip().startswith("-"):
            raise ValueError(f"must not be negative, got {v!r}")
        try:
            return parse_duration_s(v, what="time", allow_zero=allow_zero)
        except UsageError as err:
            raise ValueError(str(err)) from None

    return parse


class _Params(ConfigModel):
    """A family's parameters; subclasses (one per family) are made from _PARAM_SETS."""

    unknown_key: ClassVar[str] = "has no parameter {key!r} (it takes {expected})"
    family: ClassVar[str] = ""

    @model_validator(mode="after")
    def _one_set(self) -> _Params:
        given = {k for k in self.model_fields_set}
        sets = _PARAM_SETS[self.family]
        if not any(given == set(ps) for ps in sets):
            missing = [k for k in sets[0] if k not in given]
            what = f"missing {', '.join(missing)}" if missing and given <= set(sets[0]) else "wrong parameters"
            raise ValueError(f"{self.family}: {what} (it takes {_describe_sets(self.family)})")
        return self


@functools.cache
def _params_model(family: str) -> type[_Params]:
    names = sorted({k for ps in _PARAM_SETS[family] for k in ps})
    fields: dict[str, Any] = {}
    for k in names:
        check = _probability if k == "p" else _plain_number if k in _DIMENSIONLESS else _time(k in _ZERO_OK)
        fields[k] = (Annotated[float | None, BeforeValidator(check)], None)
    model = create_model(f"{family.title()}Params", __base__=_Params, **fields)
    model.family = family
    return model


def _build(family: str, p: dict[str, float], text: str) -> NoiseSpec:
    if family == "normal":
        return DistributionNoise(D.normal(p["mean"], p["sd"]), text)
    if family == "lognormal":
        if "median" in p:
            return DistributionNoise(D.lognormal(p["median"], p["sigma"]), text)
        if p["mean"] <= 0:
            raise UsageError(f"lognormal mean must be positive in {text!r}")
        s2 = math.log1p((p["sd"] / p["mean"]) ** 2)
        return DistributionNoise(D.lognormal(p["mean"] / math.exp(s2 / 2), math.sqrt(s2)), text)
    if family == "exponential":
        if p["mean"] <= 0:
            raise UsageError(f"exponential mean must be positive in {text!r}")
        return DistributionNoise(D.exponential(p["mean"]), text)
    if family == "gamma":
        if "scale" in p:
            return DistributionNoise(D.gamma(p["shape"], p["scale"]), text)
        if p["mean"] <= 0:
            raise UsageError(f"gamma mean must be positive in {text!r}")
        if "shape" in p:
            return DistributionNoise(D.gamma(p["shape"], p["mean"] / p["shape"]), text)
        shape = (p["mean"] / p["sd"]) ** 2
        return DistributionNoise(D.gamma(shape, p["sd"] ** 2 / p["mean"]), text)
    if family == "weibull":
        return DistributionNoise(D.weibull(p["shape"], p["scale"]), text)
    if family == "pareto":
        if p["alpha"] <= 1:
            raise UsageError(
                f"pareto alpha must exceed 1 (at alpha <= 1 the expected delay is infinite), got {p['alpha']:g}"
            )
        return DistributionNoise(D.pareto(p["alpha"], p["scale"]), text)
    if family == "uniform":
        if p["high"] <= p["low"]:
            raise UsageError(f"uniform high must exceed low in {text!r}")
        return DistributionNoise(D.uniform(p["low"], p["high"]), text)
    if family == "bernoulli":
        return DistributionNoise(D.bernoulli(p["p"], p["delay"]), text)
    if family == "periodic":
        if p["duration"] >= p["period"]:
            raise UsageError(f"periodic duration must be shorter than its period in {text!r}")
        return PeriodicNoise(p["period"], p["duration"], text)
    raise AssertionError(family)
