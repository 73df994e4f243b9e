"""What a synchronization round sees of the noise: detours as a stationary stream.

A round is short (L ~ us) next to a phase, so what delays it is one detour, not a
phase's worth of noise.  Two ways a detour lands in round r on a node:

* a detour *in progress* when the partner's message arrives.  The node sat idle
  since it finished its own part, and noise keeps running on an idle CPU, so the
  message can find it inside a detour; the round then waits for that detour's
  *residual* (remaining) length.  In a stationary stream of detours (rate lam,
  lengths d with survival S_d, mean mu, noise fraction f = lam mu) the detour
  covering a random instant has the length-biased law and a uniform split into
  age and residual, so (renewal theory, e.g. Cox, *Renewal Theory*, 1962,
  sec. 5.2; Ross, *Stochastic Processes*, 2nd ed., 1996, sec. 3.4):

      P(covered, age < a, residual > b) = lam * int_0^a S_d(b + s) ds
                                        = lam * (I(b) - I(a + b)),
      I(x) = int_x^inf S_d(z) dz = E[(d - x)^+].

  The age condition is the idle gap: a detour that began before the node went
  idle would have delayed its own part instead, so only age < gap counts;
* a detour *starting* during the round's L of work, probability
  q = 1 - exp(-lam L) (Poisson arrivals), which costs its full length.

From a run (fit:RUN) lam and the lengths are the measured detours
(detours.parquet, overlaps merged per CPU, all probed CPUs pooled).  A
distribution of per-phase delays D carries no detour-level information; the
assumption used (and stated in the model output) reads D as detours as the
synchronization model always did: with an atom at 0, a phase holds one detour
with probability P(D>0), its length a draw of D given D>0; otherwise D is
k = max(1, E[D]^2/Var[D]) detours of length D/k (the moment match of a Poisson
number of equal events).  Either way lam = (detours per phase) / (W + E[D]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from jitterscope.simulate import distributions as D


@dataclass
class Detours:
    """A stationary detour stream: `rate` per second of wall time, lengths (seconds)."""

    rate: float
    mean_length: float
    description: str
    lengths: np.ndarray | None = None  # measured lengths, sorted (from a run)
    law: D.Delay | None = None  # or a length distribution

    @property
    def noise_fraction(self) -> float:
        return min(1.0, self.rate * self.mean_length)

    def sf(self, x: np.ndarray) -> np.ndarray:
        """P(length > x)."""
        x = np.asarray(x, dtype=float)
        if self.lengths is not None:
            n = len(self.lengths)
            return (n - np.searchsorted(self.lengths, x, side="right")) / max(n, 1)
        assert self.law is not None
        return np.where(x < 0, 1.0, np.clip(self.law.sf(np.maximum(x, 0.0)), 0.0, 1.0))

    def excess(self, x: np.ndarray) -> np.ndarray:
        """I(x) = E[(length - x)^+] for x >= 0 (grid-spaced x from 0 for a law)."""
        x = np.asarray(x, dtype=float)
        if self.lengths is not None:
            d = self.lengths
            tail = np.concatenate([np.cumsum(d[::-1])[::-1], [0.0]])  # sum of d_j, j >= i
            i = np.searchsorted(d, x, side="right")
            return np.maximum((tail[i] - (len(d) - i) * x) / max(len(d), 1), 0.0)
        # I(x) = E[d] - int_0^x S_d, by the trapezoid rule on 16 sub-steps per spacing
        # (x is an evenly spaced grid starting at 0 here)
        if len(x) < 2:
            return np.full(x.shape, self.mean_length)
        fine = np.linspace(0.0, float(x[-1]), 16 * (len(x) - 1) + 1)
        s = self.sf(fine)
        cum = np.concatenate([[0.0], np.cumsum((s[1:] + s[:-1]) / 2 * np.diff(fine))])
        return np.maximum(self.mean_length - cum[::16], 0.0)

    def start_probability(self, seconds: float) -> float:
        """P(a detour starts within `seconds` of work): Poisson arrivals."""
        return -math.expm1(-self.rate * seconds)


def detours_from_lengths(lengths_s: np.ndarray, period_s: float) -> Detours:
    """A measured detour stream: all detours of all CPUs over their summed time."""
    d = np.sort(np.asarray(lengths_s, dtype=float))
    d = d[d > 0]
    rate = len(d) / period_s if period_s > 0 else 0.0
    mean = float(d.mean()) if len(d) else 0.0
    return Detours(
        rate,
        mean,
        f"the run's {len(d)} measured detours ({rate:.4g}/s, noise fraction {rate * mean:.3g}), lengths as measured",
        lengths=d,
    )


def detours_from_delay(delay: D.Delay, phase_s: float) -> Detours:
    """The documented reading of a per-phase delay distribution as detours."""
    p_pos = float(delay.sf(np.array(0.0)))
    m, v = delay.mean(), delay.var()
    wall = phase_s + max(m, 0.0)
    if 0.0 in delay.atoms and p_pos < 1.0:
        mean_len = m / p_pos if p_pos > 0 else 0.0
        law: D.Delay = _Positive(delay, p_pos)
        return Detours(
            p_pos / wall,
            mean_len,
            f"D read as detours: one per phase with probability P(D>0) = {p_pos:.3g}, its length a draw of D given D>0",
            law=law,
        )
    k = max(1.0, m * m / v) if v > 0 and math.isfinite(v) else 1.0
    return Detours(
        k / wall,
        max(m, 0.0) / k,
        f"D read as {k:.3g} detours per phase (E[D]^2/Var[D]) of length D/{k:.3g}",
        law=D.Scaled(delay, 1.0 / k),
    )


@dataclass
class _Positive(D.Delay):
    """D given D > 0 (sf only: all the barrier model needs of a length law)."""

    base: D.Delay
    p_pos: float

    def sf(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return np.where(x <= 0, 1.0, self.base.sf(np.maximum(x, 0.0)) / self.p_pos)
