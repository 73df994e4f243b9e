"""Execution-time profiles (ETPs) and exact times in ticks, for the PTTS model (the thesis, section 5.3).

A profile is given in a model file as one of `pmf: {time: probability}`,
`uniform: [lo, hi]`, `csv: FILE` or `run: DIR` (a measured run, etp_run.py);
`parse_etp` turns it into an `ETP`: probabilities on whole ticks of the
model's resolution.  Times are parsed exactly (`Fraction`s of ns) and a time
that is not a whole number of ticks is an error, never rounded.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, StrictBool, model_validator

from jitterscope import boundedio
from jitterscope.config import ConfigModel
from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.units import DURATION_RE, DURATION_UNITS_NS, NUMBER

# The units a model accepts, exactly: every unit of units.py's one table of duration units.
UNITS_NS: dict[str, Fraction] = {u: Fraction(v) for u, v in DURATION_UNITS_NS.items()}
UNIT_NAMES = "ns, us, ms, s, min or h"
TIME_RE = DURATION_RE

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
    m = TIME_RE.match(str(text))
    if not m:
        raise ModelError(f"{where}: malformed time {text!r} (use a number and a unit, e.g. 12ms, 0.5us)")
    unit = m.group(2) or default_unit
    if not unit:
        raise ModelError(f"{where}: {text!r} needs a unit (e.g. {m.group(1)}ms)")
    if unit not in UNITS_NS:
        raise ModelError(f"{where}: unknown unit {unit!r} in {text!r} (use {UNIT_NAMES})")
    return Fraction(m.group(1)) * UNITS_NS[unit]


def to_ticks(ns: Fraction, resolution_ns: Fraction, where: str) -> int:
    q = ns / resolution_ns
    if q.denominator != 1:
        raise ModelError(
            f"{where}: {_fmt_frac_ns(ns)} is not a whole number of ticks of the resolution "
            f"{_fmt_frac_ns(resolution_ns)} (use a finer resolution)"
        )
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
    prob: np.ndarray  # float64, sums to 1
    source: str = ""  # how it was given, for the description

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
        """Width hi - lo + 1 in ticks (thesis eq. 5.13/5.14: tau_hat - tau_check + 1)."""
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
        return (
            self._cum[np.searchsorted(self.support, hi_incl, side="right")]
            - self._cum[np.searchsorted(self.support, lo_excl, side="right")]
        )

    def mean(self) -> float:
        return float(np.dot(self.support, self.prob))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.random(n)
        idx = np.searchsorted(self._cum[1:], u * self._cum[-1], side="right")
        return self.support[np.minimum(idx, len(self.support) - 1)]


_ETP_KINDS = ("pmf", "uniform", "csv", "run")
_ETP_OPTIONS = {
    "pmf": {"normalize"},
    "uniform": set(),
    "csv": {"unit", "normalize"},
    "run": {"cpu", "node", "base", "samples", "round"},
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
    node: Any = None
    base: Any = None
    samples: Any = None
    round: Any = None

    @model_validator(mode="after")
    def _one_kind(self) -> EtpSpec:
        kinds = [k for k in _ETP_KINDS if k in self.model_fields_set]
        if not kinds:
            raise ValueError(
                "empty profile: give one of {pmf: ...}, {uniform: [lo, hi]}, {csv: FILE}, {run: DIR, ...}"
                if not self.model_fields_set
                else f"needs one of {', '.join(_ETP_KINDS)}"
            )
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


def given_profile(spec: EtpSpec, res_ns: Fraction, where: str, base_dir: Path) -> ETP:
    """The profile of a pmf, uniform or csv spec (a run's is etp_run.etp_from_run's)."""
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
            raise ModelError(f"{where}.unit: unknown unit {unit!r} (use {UNIT_NAMES})")
        f = resolve_path(base_dir, spec.csv, f"{where}.csv")
        pairs = _read_csv(f, f"{where}.csv")
        return _build(pairs, res_ns, f"{where}.csv ({f.name})", str(unit) if unit else None, normalize, f"csv {f.name}")
    raise ModelError(f"{where}: a {kind} profile is not given in the model file itself")


def resolve_path(base_dir: Path, val: Any, where: str) -> Path:
    if not isinstance(val, str) or not val.strip():
        raise ModelError(f"{where}: give a path")
    p = Path(val).expanduser()
    return p if p.is_absolute() else base_dir / p


def _read_csv(path: Path, where: str) -> list[tuple[Any, Any]]:
    try:
        text = boundedio.read_text(path, "profile file")
    except JitterscopeError as err:
        raise ModelError(f"{where}: {err}") from None
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    rows = list(csv.reader(lines))
    if rows and rows[0] and not re.match(rf"^\s*{NUMBER}", rows[0][0]):
        rows = rows[1:]  # header
    pairs = []
    for n, r in enumerate(rows, 1):
        if len(r) < 2:
            raise ModelError(f"{where}: row {n}: need two columns, time and probability")
        pairs.append((r[0].strip(), r[1].strip()))
    if not pairs:
        raise ModelError(f"{where}: empty profile ({path} has no rows)")
    return pairs


def _build(
    pairs: list[tuple[Any, Any]], res_ns: Fraction, where: str, unit: str | None, normalize: bool, source: str
) -> ETP:
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
