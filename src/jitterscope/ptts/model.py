"""The PTTS model file: a chain of time-triggered components (seed 003, section 5.3).

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
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, StrictBool, model_validator

from jitterscope.config import ConfigModel, read_yaml, validate
from jitterscope.errors import JitterscopeError, UsageError

# Largest hyper-period (in ticks) the engine accepts: class indices and times
# stay below 2**62 so sums of a time and a delay never overflow int64.
MAX_TICKS = 2**62

UNITS_NS: dict[str, Fraction] = {
    "ns": Fraction(1), "us": Fraction(1000), "µs": Fraction(1000), "ms": Fraction(10**6),
    "s": Fraction(10**9),
}
_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_TIME_RE = re.compile(rf"^\s*({_NUM})\s*([a-zµ]*)\s*$")

PROB_TOL = 1e-9  # how far from 1 the probabilities of a profile may sum


class ModelError(UsageError):
    """Bad model input: one line naming where (component and field)."""


def parse_time_ns(text: Any, where: str, default_unit: str | None = None) -> Fraction:
    """An exact time in ns from `12ms`, `0.1ms`, `250us` (or a bare number in default_unit)."""
    if isinstance(text, bool) or text is None:
        raise ModelError(f"{where}: expected a time such as 12ms, got {text!r}")
    if isinstance(text, (int, float)):
        if default_unit is None:
            raise ModelError(f"{where}: {text!r} needs a unit (e.g. {text}ms)")
        if isinstance(text, float) and not math.isfinite(text):
            raise ModelError(f"{where}: {text!r} is not a finite time")
        text = f"{text!r}{default_unit}" if isinstance(text, float) else f"{text}{default_unit}"
    m = _TIME_RE.match(str(text))
    if not m:
        raise ModelError(f"{where}: malformed time {text!r} (use a number and a unit, e.g. 12ms, 0.5us)")
    unit = m.group(2) or default_unit
    if not unit:
        raise ModelError(f"{where}: {text!r} needs a unit (e.g. {m.group(1)}ms)")
    if unit not in UNITS_NS:
        raise ModelError(f"{where}: unknown unit {unit!r} in {text!r} (use ns, us, ms or s)")
    return Fraction(m.group(1)) * UNITS_NS[unit]


def to_ticks(ns: Fraction, resolution_ns: Fraction, where: str) -> int:
    q = ns / resolution_ns
    if q.denominator != 1:
        raise ModelError(f"{where}: {_fmt_frac_ns(ns)} is not a whole number of ticks of the resolution "
                         f"{_fmt_frac_ns(resolution_ns)} (use a finer resolution)")
    return int(q)


def _fmt_frac_ns(ns: Fraction) -> str:
    for unit in ("s", "ms", "us", "ns"):
        v = ns / UNITS_NS[unit]
        if abs(v) >= 1 or unit == "ns":
            return f"{float(v):.12g}{unit}"
    return f"{float(ns)}ns"


@dataclass
class ETP:
    """An execution-time profile: probabilities on whole ticks (support sorted, unique)."""

    support: np.ndarray  # int64 ticks, ascending
    prob: np.ndarray     # float64, sums to 1
    source: str = ""     # how it was given, for the description

    def __post_init__(self) -> None:
        self.support = np.asarray(self.support, dtype=np.int64)
        self.prob = np.asarray(self.prob, dtype=np.float64)
        self._cum = np.concatenate([[0.0], np.cumsum(self.prob)])
        # a dense CDF table over [lo - 1, hi] when it is small: one take instead of two binary searches
        self._table = None
        if len(self.support) and self.support[-1] - self.support[0] <= 1 << 22:
            n = int(self.support[-1] - self.support[0]) + 2
            counts = np.zeros(n)
            counts[self.support - self.support[0] + 1] = self.prob
            self._table = np.cumsum(counts)
            self._table[-1] = self._cum[-1]

    @property
    def lo(self) -> int:
        return int(self.support[0])

    @property
    def hi(self) -> int:
        return int(self.support[-1])

    @property
    def span(self) -> int:
        """Width hi - lo + 1 in ticks (seed eq. 5.13/5.14: tau_hat - tau_check + 1)."""
        return self.hi - self.lo + 1

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """P(X <= x) for integer tick arrays x."""
        return self._cum[np.searchsorted(self.support, x, side="right")]

    def interval(self, lo_excl: np.ndarray, hi_incl: np.ndarray) -> np.ndarray:
        """P(lo_excl < X <= hi_incl), exactly 0 when no support point lies in between."""
        if self._table is not None:
            base, last = int(self.support[0]) - 1, len(self._table) - 1
            hi_i = np.clip(hi_incl - base, 0, last)
            lo_i = np.clip(lo_excl - base, 0, last)
            return self._table[hi_i] - self._table[lo_i]
        return self._cum[np.searchsorted(self.support, hi_incl, side="right")] - \
            self._cum[np.searchsorted(self.support, lo_excl, side="right")]

    def mean(self) -> float:
        return float(np.dot(self.support, self.prob))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.random(n)
        idx = np.searchsorted(self._cum[1:], u * self._cum[-1], side="right")
        return self.support[np.minimum(idx, len(self.support) - 1)]


@dataclass
class Component:
    name: str
    period: int  # ticks
    offset: int  # ticks, as given (the analysis uses it modulo the period)
    etp: ETP


@dataclass
class Model:
    resolution_ns: Fraction
    unit: str                 # display unit for times (the resolution's unit)
    components: list[Component]
    path: Path | None = None
    name: str = ""
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def unit_ns(self) -> Fraction:
        return UNITS_NS[self.unit]

    def ticks_to_unit(self, ticks: Any) -> Any:
        """Ticks (int, float or array) to the model's unit as floats."""
        r = self.resolution_ns / self.unit_ns
        if isinstance(ticks, np.ndarray):
            decimals = 0 if r >= 1 else math.ceil(-math.log10(float(r)) - 1e-9)
            out = ticks.astype(np.float64) * float(r)
            if r.denominator == 1 or (10 ** decimals * r).denominator == 1:
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
        if secs >= 3600:
            text += f" ({secs / 3600:.3g} h)"
        elif secs >= 60:
            text += f" ({secs / 60:.3g} min)"
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

    def with_component(self, index: int, **changes: Any) -> "Model":
        comps = list(self.components)
        comps[index] = replace(comps[index], **changes)
        m = replace(self, components=comps)
        check_hyperperiod(m)
        return m

    def with_periods(self, periods: list[int]) -> "Model":
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
                f"{h} ticks, beyond what fits (2^62 ticks); use a coarser resolution or rounder periods")


_ETP_KINDS = ("pmf", "uniform", "csv", "run")
_ETP_OPTIONS = {
    "pmf": {"normalize"},
    "uniform": set(),
    "csv": {"unit", "normalize"},
    "run": {"cpu", "base", "samples", "round"},
}


class EtpSpec(ConfigModel):
    """One of pmf, uniform, csv, run, with that kind's options (checked after the keys)."""

    pmf: dict[Any, Any] | None = None
    uniform: list[Any] | None = Field(None, min_length=2, max_length=2)
    csv: str | None = None
    run: str | None = None
    normalize: StrictBool = False
    unit: str | None = None
    cpu: Any = None
    base: Any = None
    samples: Any = None
    round: Any = None

    @model_validator(mode="after")
    def _one_kind(self) -> "EtpSpec":
        kinds = [k for k in _ETP_KINDS if k in self.model_fields_set]
        if not kinds:
            raise ValueError("empty profile: give one of {pmf: ...}, {uniform: [lo, hi]}, {csv: FILE}, "
                             "{run: DIR, ...}" if not self.model_fields_set else
                             f"needs one of {', '.join(_ETP_KINDS)}")
        if len(kinds) > 1:
            raise ValueError(f"give exactly one of {', '.join(_ETP_KINDS)} (got {', '.join(kinds)})")
        extra = sorted(self.model_fields_set - {kinds[0]} - _ETP_OPTIONS[kinds[0]])
        if extra:
            allowed = ", ".join(sorted(_ETP_OPTIONS[kinds[0]])) or "none"
            raise ValueError(f"unknown key {extra[0]!r} for a {kinds[0]} profile (options: {allowed})")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in _ETP_KINDS if k in self.model_fields_set)


class ComponentSpec(ConfigModel):
    name: str = Field(min_length=1)
    period: Any          # a time; turned into ticks once the resolution is known
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
    m = _TIME_RE.match(str(text))
    unit = (m.group(2) if m else "") or "ms"
    return "us" if unit == "µs" else unit


def load_model(path: str | Path) -> Model:
    """Read and check a model file; every problem is a one-line ModelError."""
    p = Path(path)
    if not p.exists():
        raise ModelError(f"{p}: no such model file")
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
            raise ModelError(f"field unit: unknown unit {spec.unit!r} (use ns, us, ms or s)")
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
    where = f"{label}: field etp"
    if not isinstance(spec, EtpSpec):
        spec = validate(spec, EtpSpec, where, error=ModelError)
    kind = spec.kind
    normalize = spec.normalize
    if kind == "pmf":
        if not spec.pmf:
            raise ModelError(f"{where}.pmf: empty profile (give {{time: probability, ...}})")
        pairs = [(k, v) for k, v in spec.pmf.items()]
        return _build(pairs, res_ns, f"{where}.pmf", None, normalize, "pmf")
    if kind == "uniform":
        val = spec.uniform or []
        lo = to_ticks(parse_time_ns(val[0], f"{where}.uniform"), res_ns, f"{where}.uniform")
        hi = to_ticks(parse_time_ns(val[1], f"{where}.uniform"), res_ns, f"{where}.uniform")
        if lo < 0:
            raise ModelError(f"{where}.uniform: negative execution time")
        if hi < lo:
            raise ModelError(f"{where}.uniform: empty profile (hi < lo)")
        n = hi - lo + 1
        if n > 50_000_000:
            raise ModelError(f"{where}.uniform: {n} ticks wide; use a coarser resolution")
        sup = np.arange(lo, hi + 1, dtype=np.int64)
        return ETP(sup, np.full(n, 1.0 / n), source=f"uniform {lo}..{hi} ticks")
    if kind == "csv":
        unit = spec.unit
        if unit is not None and str(unit) not in UNITS_NS:
            raise ModelError(f"{where}.unit: unknown unit {unit!r} (use ns, us, ms or s)")
        f = _resolve(base_dir, spec.csv, f"{where}.csv")
        pairs = _read_csv(f, f"{where}.csv")
        return _build(pairs, res_ns, f"{where}.csv ({f.name})", str(unit) if unit else None, normalize,
                      f"csv {f.name}")
    from jitterscope.ptts.etp_run import etp_from_run  # etp_run reads times with this module's parser

    d = _resolve(base_dir, spec.run, f"{where}.run")
    return etp_from_run(d, spec.model_dump(exclude_unset=True), res_ns, where)


def _resolve(base_dir: Path, val: Any, where: str) -> Path:
    if not isinstance(val, str) or not val.strip():
        raise ModelError(f"{where}: give a path")
    p = Path(val).expanduser()
    return p if p.is_absolute() else base_dir / p


def _read_csv(path: Path, where: str) -> list[tuple[Any, Any]]:
    import csv

    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ModelError(f"{where}: no such file {path}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ModelError(f"{where}: cannot read {path} ({err})") from None
    rows = [r for r in csv.reader(line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))]
    if rows and rows[0] and not re.match(rf"^\s*{_NUM}", rows[0][0]):
        rows = rows[1:]  # header
    pairs = []
    for n, r in enumerate(rows, 1):
        if len(r) < 2:
            raise ModelError(f"{where}: row {n}: need two columns, time and probability")
        pairs.append((r[0].strip(), r[1].strip()))
    if not pairs:
        raise ModelError(f"{where}: empty profile ({path} has no rows)")
    return pairs


def _build(pairs: list[tuple[Any, Any]], res_ns: Fraction, where: str, unit: str | None,
           normalize: bool, source: str) -> ETP:
    times: list[int] = []
    probs: list[float] = []
    for k, v in pairs:
        t = to_ticks(parse_time_ns(k, where, unit), res_ns, where)
        if t < 0:
            raise ModelError(f"{where}: negative execution time {k!r}")
        try:
            pv = float(v)
        except (TypeError, ValueError):
            raise ModelError(f"{where}: probability {v!r} at {k!r} is not a number") from None
        if not math.isfinite(pv) or pv < 0:
            raise ModelError(f"{where}: probability {v!r} at {k!r} must be a finite number >= 0")
        times.append(t)
        probs.append(pv)
    t_arr = np.array(times, dtype=np.int64)
    p_arr = np.array(probs, dtype=np.float64)
    if len(np.unique(t_arr)) != len(t_arr):
        dup = int(t_arr[np.argmax(np.bincount(np.unique(t_arr, return_inverse=True)[1]))])
        raise ModelError(f"{where}: the time {dup} ticks is given more than once")
    total = float(p_arr.sum())
    if total <= 0:
        raise ModelError(f"{where}: empty profile (all probabilities are 0)")
    if normalize:
        p_arr = p_arr / total
    elif abs(total - 1.0) > PROB_TOL:
        raise ModelError(f"{where}: probabilities sum to {total:.12g}, not 1 (or set normalize: true)")
    else:
        p_arr = p_arr / total  # remove the last bits of rounding
    keep = p_arr > 0
    order = np.argsort(t_arr[keep], kind="stable")
    return ETP(t_arr[keep][order], p_arr[keep][order], source=source)
