"""The DVFS jitter-compensation controller (spec A.7; the shared-memory jitter paper, sec. 4.1.6,
Table 3, App. E.2), as pure functions of one subframe.

Before a subframe with expected time tau(f0) at nominal frequency, and the thread's jitter count J,
the controller picks f so that tau(f) = tau(f0) - J/k (k: the reactivity, how many subframes the
jitter is spread over), quantised to the frequency table and saturated at its ends.  After the
subframe, J += T - tau(f0) with T its actual time (the spec's general form of the paper's k = 1
rule).  Two timing models ([amb] A.14 #4):

* paper: tau(f) = tau(f0) * f0 / f (Eq. 1 with the miss penalty in cycles: all time scales);
* physical: tau(f) = tau(f0) * (alpha * f0 / f + 1 - alpha) (memory time fixed in ns; alpha is the
  share of the subframe's time that scales with the clock, 1 = CPU-bound, A.13).

Power (spec A.7): dynamic power relative to nominal is factor^3 (V ~ f, P ~ C V^2 f).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from jitterscope.errors import UsageError
from jitterscope.whatif import TABLE_SPEC


def parse_table(text: str) -> np.ndarray:
    """`LO:HI:STEP` or a comma list of factors -> sorted factors; 1.0 must be one of them."""
    try:
        if ":" in text:
            lo, hi, step = (float(x) for x in text.split(":"))
            if step <= 0 or hi < lo or (hi - lo) / step > 1000:
                raise ValueError
            vals = lo + step * np.arange(int(math.floor((hi - lo) / step + 1e-9)) + 1)
        else:
            vals = np.array([float(x) for x in text.split(",")])
    except ValueError:
        raise UsageError(
            f"--table {text!r}: expected LO:HI:STEP (e.g. {TABLE_SPEC}) or a list of factors (e.g. 0.9,1.0,1.1)"
        ) from None
    vals = np.unique(np.round(vals, 9))
    if len(vals) == 0 or vals[0] <= 0:
        raise UsageError(f"--table {text!r}: factors must be positive")
    if not np.any(np.isclose(vals, 1.0)):
        raise UsageError(f"--table {text!r}: the table must contain the nominal factor 1.0")
    return vals


@dataclass(frozen=True)
class Controller:
    """One controller configuration (every [impl] choice of spec A.7 with its default)."""

    table: tuple[float, ...] = tuple(parse_table(TABLE_SPEC))
    k: int = 1  # reactivity: the jitter is spread over the next k subframes
    model: str = "paper"
    alpha: float = 1.0  # physical model: share of time that scales with frequency
    quantize: str = "nearest"  # nearest table entry (reproduces the 0.95 dips) or ceil
    transition_ns: float = 10_000.0  # core stall on a frequency change (PLL lock, Table 3: 10 us)

    def scale(self, factor: float) -> float:
        """tau(f) / tau(f0) at this factor f/f0."""
        if self.model == "paper":
            return 1.0 / factor
        return self.alpha / factor + 1.0 - self.alpha

    def raw_factor(self, tau0_ns: float, jitter_ns: float) -> float:
        """The unquantised f/f0 with tau(f) = tau(f0) - J/k (inf when no frequency is fast enough)."""
        target = tau0_ns - jitter_ns / self.k
        if tau0_ns <= 0:
            return 1.0
        r = target / tau0_ns  # wanted tau(f)/tau(f0)
        if self.model == "paper":
            return math.inf if r <= 0 else 1.0 / r
        rest = r - (1.0 - self.alpha)  # the part the clock can change
        return math.inf if rest <= 0 else self.alpha / rest

    def quantise(self, raw: float) -> float:
        """The table entry for a raw factor: clamp to [min, max], then nearest (ties upward) or ceil."""
        t = self.table
        if raw >= t[-1]:
            return t[-1]
        if raw <= t[0]:
            return t[0]
        if self.quantize == "ceil":
            return next(x for x in t if x >= raw - 1e-12)
        return min(t, key=lambda x: (abs(x - raw), -x))

    def choose(self, tau0_ns: float, jitter_ns: float) -> float:
        return self.quantise(self.raw_factor(tau0_ns, jitter_ns))


def step(
    c: Controller, tau0_ns: float, jitter_ns: float, new_jitter_ns: float = 0.0, previous: float = 1.0
) -> tuple[float, float]:
    """One subframe without dependencies: (chosen factor, J after it) when `new_jitter_ns` is lost in it."""
    f = c.choose(tau0_ns, jitter_ns)
    stall = c.transition_ns if f != previous else 0.0
    actual = tau0_ns * c.scale(f) + stall + new_jitter_ns
    return f, jitter_ns + actual - tau0_ns


def relative_power(factors: np.ndarray, times_ns: np.ndarray) -> float:
    """Time-weighted mean dynamic power relative to nominal, sum(f^3 T) / sum(T) (spec A.7 [impl])."""
    t = np.asarray(times_ns, dtype=float)
    return float((np.asarray(factors, dtype=float) ** 3 * t).sum() / t.sum()) if t.sum() > 0 else 1.0


def energy(factors: np.ndarray, times_ns: np.ndarray) -> float:
    """Dynamic energy in nominal-power x ns: sum(f^3 T)."""
    return float((np.asarray(factors, dtype=float) ** 3 * np.asarray(times_ns, dtype=float)).sum())
