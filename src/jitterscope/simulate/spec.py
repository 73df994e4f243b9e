"""Parse a noise SPEC: a distribution of the per-phase delay, a periodic signature,
a run directory (trace-driven) or `fit:RUN` (the best fit of a run's delays).

    normal(mean=1.91ms, sd=0.36ms)      lognormal(median=1ms, sigma=0.5)
    exponential(mean=50us)              gamma(shape=2, scale=1ms)
    weibull(shape=0.8, scale=1ms)       pareto(alpha=2.5, scale=100us)
    bernoulli(p=0.01, delay=2ms)        periodic(period=10ms, duration=25us)
    runs/quiet                          fit:runs/quiet

Durations need a unit (a silent guess between s and ns is a factor of 10^9).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

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
    "bernoulli": [("p", "delay")],
    "periodic": [("period", "duration")],
}
_DIMENSIONLESS = {"sigma", "shape", "alpha", "p"}
_ZERO_OK = {"mean"}  # a normal delay may be centred on 0 (only sd spreads it)
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
        raise UsageError("empty --noise: give a distribution like normal(mean=1.91ms,sd=0.36ms), "
                         "periodic(...), a run directory or fit:RUN")
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
        "normal": "normal(mean=1.91ms,sd=0.36ms)", "lognormal": "lognormal(median=1ms,sigma=0.5)",
        "exponential": "exponential(mean=50us)", "gamma": "gamma(shape=2,scale=1ms)",
        "weibull": "weibull(shape=0.8,scale=1ms)", "pareto": "pareto(alpha=2.5,scale=100us)",
        "bernoulli": "bernoulli(p=0.01,delay=2ms)", "periodic": "periodic(period=10ms,duration=25us)",
    }[family]


def _parse_params(family: str, body: str, text: str) -> dict[str, float]:
    if family not in _PARAM_SETS:
        raise UsageError(f"unknown noise family {family!r} in {text!r}: use one of {', '.join(FAMILIES)}")
    allowed = {k for ps in _PARAM_SETS[family] for k in ps}
    out: dict[str, float] = {}
    for part in [p for p in body.split(",") if p.strip()]:
        if "=" not in part:
            raise UsageError(f"malformed parameter {part.strip()!r} in {text!r}: use name=value, e.g. {_example(family)}")
        key, value = (s.strip() for s in part.split("=", 1))
        key = key.lower()
        if key not in allowed:
            raise UsageError(f"{family} has no parameter {key!r} (it takes {_describe_sets(family)})")
        if key in out:
            raise UsageError(f"parameter {key!r} given twice in {text!r}")
        out[key] = _value(family, key, value)
    given = set(out)
    if not any(given == set(ps) for ps in _PARAM_SETS[family]):
        missing = [k for k in _PARAM_SETS[family][0] if k not in given]
        what = f"missing {', '.join(missing)}" if missing and given <= set(_PARAM_SETS[family][0]) else "wrong parameters"
        raise UsageError(f"{family}: {what} in {text!r} (it takes {_describe_sets(family)})")
    return out


def _describe_sets(family: str) -> str:
    return " or ".join("(" + ", ".join(ps) + ")" for ps in _PARAM_SETS[family])


def _value(family: str, key: str, value: str) -> float:
    what = f"{family} {key}"
    if key in _DIMENSIONLESS:
        try:
            v = float(value)
        except ValueError:
            raise UsageError(f"{what} {value!r} must be a plain number (no unit)") from None
        if not math.isfinite(v) or v <= 0:
            raise UsageError(f"{what} must be positive, got {value!r}")
        if key == "p" and v > 1:
            raise UsageError(f"{what} is a probability: 0 < p <= 1, got {value!r}")
        return v
    if value.strip().startswith("-"):
        raise UsageError(f"{what} must not be negative, got {value!r}")
    return parse_duration_s(value, what=what, allow_zero=key in _ZERO_OK)


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
            raise UsageError(f"pareto alpha must exceed 1 (at alpha <= 1 the expected delay is infinite), "
                             f"got {p['alpha']:g}")
        return DistributionNoise(D.pareto(p["alpha"], p["scale"]), text)
    if family == "bernoulli":
        return DistributionNoise(D.bernoulli(p["p"], p["delay"]), text)
    if family == "periodic":
        if p["duration"] >= p["period"]:
            raise UsageError(f"periodic duration must be shorter than its period in {text!r}")
        return PeriodicNoise(p["period"], p["duration"], text)
    raise AssertionError(family)
