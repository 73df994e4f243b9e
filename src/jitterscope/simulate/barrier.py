"""One phase of a bulk-synchronous job ended by a dissemination barrier, with i.i.d.
noise: the distribution of a node's phase time, exactly for the i.i.d. model.

The barrier.  Dissemination (Hensgen, Finkel & Manber, "Two algorithms for
barrier synchronization", Int. J. Parallel Programming 17(1):1-17, 1988): in
round r = 0..R-1, R = ceil(log2 N), node i waits for node i - 2^r, then spends L:

    t_i(r+1) = max(t_i(r), t_(i-2^r)(r) + X_i,r) + L + Y_i,r

X is a detour in progress when the message arrives and Y one that starts in the
round (see `detours`).  Recursive doubling (allreduce; Thakur, Rabenseifner &
Gropp, IJHPCA 19(1), 2005) has the same dependency structure.

The dependency cone.  Unrolling, t_i(R) depends on round r's noise only on the
2^(R-1-r) nodes i - s, s a sum of a subset of {2^(r+1), .., 2^(R-1)}, and on
every node's compute time.  The two arguments of round R-1's max depend on
disjoint halves of those nodes (i - [0, 2^(R-1)) and i - 2^(R-1) - [0, 2^(R-1))),
and so on down: the cone is a perfect binary tree whose leaves are the nodes'
compute delays and whose inner vertices are the rounds.  Hence, with i.i.d.
noise, the exact recursion in distribution (V_0 = compute delay):

    V_(r+1) = max(V_r, V'_r + X(V'_r - V_r)) + Y_r,     V_r, V'_r i.i.d.

(plus L per round, added outside).  Noise in a collective amplified along such
trees is what Hoefler, Schneider & Lumsdaine simulate ("Characterizing the
influence of system noise on large-scale applications by simulation", SC 2010).
Charging every round the maximum over all N nodes (this module's predecessor)
treats each round as if all N nodes' noise reached every node: an upper bound
that overshoots by orders of magnitude at scale.  Summing, over rounds, the
maximum over the 2^(R-1-r) nodes of the cone is a tighter upper bound (the max
of sums is at most the sum of maxes); the recursion is the exact value.

Computation.  On a lattice x_k = x0 + k h, values rounded up to the lattice
(rounding commutes with max, so the max steps are exact on it), carrying the
survival function S(x_k) = P(V > x_k) so that the tiny tail probabilities of
many nodes keep their relative precision.  With p the lattice masses:

    P(max(V, V'+X) > y) = S(y)(2 - S(y)) + lam * T(y),
    T(y) = sum_(v < v' <= y) p(v) p(v') [I(y - v') - I(y - v)]
         = (p F-) * I (y) - [(p S) * I (y) - S(y) (p * I)(y)]

(* a discrete convolution, F- = P(V < x)), and P(V + Y > y) = S(y) + q (p * S_d)(y).
All convolutions are direct sums of non-negative terms (np.convolve), never FFTs,
whose absolute round-off would swamp probabilities of 1e-18.  The leaves are the
maximum of N / 2^R compute delays (F^(N/2^R), a valid law for any positive
power), so the tree without noise gives exactly the maximum of N (F^N): with the
order-statistic machinery the lattice's rounding of that maximum is removed
exactly and only the barrier's increment comes from the lattice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitterscope.simulate import distributions as D
from jitterscope.simulate.detours import Detours
from jitterscope.simulate.orderstats import max_moments, max_quantile

POINTS = 4096  # lattice points
TAIL = 1e-12  # survival allowed beyond the lattice's top


@dataclass
class PhaseLaw:
    """A node's time in one phase beyond W + R L, on a lattice: x0 + k h, S_k = P(V > x_k)."""

    x0: float
    h: float
    sf: np.ndarray
    shift: float  # exact E[max of N] minus its lattice value (added to every draw)
    spill: float  # P(V > top of lattice): probability mass the lattice lost

    @property
    def x(self) -> np.ndarray:
        return self.x0 + self.h * np.arange(len(self.sf))

    def moments(self) -> tuple[float, float]:
        s = self.sf
        m1 = self.x0 + self.h * float(s.sum())
        p = np.concatenate([[1.0 - s[0]], s[:-1] - s[1:]])
        m2 = float(np.sum(p * self.x**2))
        return m1 + self.shift, max(m2 - m1 * m1, 0.0)


# The lattice must resolve a detour: a step coarser than RESOLVE x the mean detour rounds every
# barrier increment up to a whole step (with a tail index near 1 the 1 - 1e-12 quantile of the
# maximum is 10^7 s, a step of hours, and a 1 ms-phase job came out at 7.8 h).  Heavier tails
# are cut at the first of TOP_LEVELS that keeps the step fine; the cut tail's share of the
# compute maximum's mean is added back exactly by PhaseLaw.shift, so the mean stays exact.
RESOLVE = 0.25
TOP_LEVELS = (1e-12, 1e-9, 1e-6, 1e-4, 1e-3, 1e-2, 0.1)


def _lattice(
    delay: D.Delay, detours: Detours, n: float, rounds: int, points: int, widen: float
) -> tuple[float, float, float]:
    """(x0, h, level): from the compute delay's lower region to the 1 - level quantile of its
    maximum over n nodes plus `widen` x a long detour per round (the barrier's increment
    stays far below); level is the survival cut off the top (see RESOLVE)."""
    lo = float(np.atleast_1d(delay.quantile_by_both(np.array([1 - 1e-9]), np.array([1e-9])))[0])
    lo = max(lo, float(delay.lower)) if np.isfinite(delay.lower) else lo
    long_detour = _detour_quantile(detours, 1e-9)
    increment = widen * max(long_detour, 1e-9) * max(1, min(rounds, 8))
    finest = RESOLVE * max(detours.mean_length, 1e-9)
    for level in TOP_LEVELS:
        top = float(max_quantile(delay, 1 - level, n))
        h = (top + increment - lo) / (points - 1)
        if h <= finest:
            break
    return lo, h, level


def _detour_quantile(detours: Detours, s: float) -> float:
    if detours.lengths is not None:
        return float(detours.lengths[-1]) if len(detours.lengths) else 0.0
    assert detours.law is not None
    hi = detours.mean_length or 1e-9
    while float(detours.sf(np.array(hi))) > s and hi < 1e6:
        hi *= 2
    return hi


def phase_law(
    delay: D.Delay, detours: Detours, n: float, rounds: int, link_latency_s: float, points: int = POINTS
) -> PhaseLaw:
    """The law of one node's phase time beyond W + R L (compute delay plus barrier)."""
    widen = 1.0
    while True:
        law, level = _recurse(delay, detours, n, rounds, link_latency_s, points, widen)
        if law.spill <= max(TAIL, 10 * level if level > TOP_LEVELS[0] else 0.0) or widen >= 64:
            return law
        widen *= 4


def _recurse(
    delay: D.Delay, detours: Detours, n: float, rounds: int, link_latency_s: float, points: int, widen: float
) -> tuple[PhaseLaw, float]:
    x0, h, level = _lattice(delay, detours, n, rounds, points, widen)
    x = x0 + h * np.arange(points)
    lags = h * np.arange(points)
    excess = detours.excess(lags)  # I(j h)
    sd = detours.sf(lags)  # S_d(j h); S_d(0) = P(d > 0)
    lam = detours.rate
    q = detours.start_probability(link_latency_s)
    with np.errstate(all="ignore"):
        logf = delay.log_cdf_safe(x)
        # leaves: the maximum of n / 2^R compute delays, so that 2^R leaves make n
        s = -np.expm1(n / 2.0**rounds * logf)
        s_max = -np.expm1(n * logf)  # the maximum of n without barrier noise
    s = np.clip(np.nan_to_num(s, nan=1.0), 0.0, 1.0)
    for _ in range(rounds):
        p = _masses(s)
        below = np.concatenate([[0.0], 1.0 - s[:-1]])  # P(V < x_k) on the lattice
        a = np.convolve(p * below, excess)[:points]
        b = np.convolve(p * s, excess)[:points] - s * np.convolve(p, excess)[:points]
        s = np.clip(s * (2.0 - s) + lam * np.maximum(a - np.maximum(b, 0.0), 0.0), 0.0, 1.0)
        if q > 0:
            s = np.clip(s + q * np.convolve(_masses(s), sd)[:points], 0.0, 1.0)
    grid_max = x0 + h * float(np.clip(s_max, 0.0, 1.0).sum())
    shift = max_moments(delay, n)[0] - grid_max
    return PhaseLaw(x0, h, s, shift if np.isfinite(shift) else 0.0, float(s[-1])), level


def _masses(s: np.ndarray) -> np.ndarray:
    return np.concatenate([[1.0 - s[0]], s[:-1] - s[1:]])


def cone_bound(delay: D.Delay, hit: D.Delay, n: float, rounds: int) -> float:
    """Sum over rounds of E[max over the round's cone] of a per-round delay, plus the
    compute maximum: the upper bound the recursion tightens (for tests and docs)."""
    total = max_moments(delay, n)[0]
    for r in range(rounds):
        total += max_moments(hit, float(2 ** (rounds - 1 - r)))[0]
    return total


class LatticeDelay(D.Delay):
    """A PhaseLaw as a Delay, so the engine's samplers and sums take it as they take D."""

    family = "barrier-phase"

    def __init__(self, law: PhaseLaw) -> None:
        self.law = law
        self.params = {}
        self.lower = law.x0 + law.shift
        self._m, self._v = law.moments()

    def sf(self, x: np.ndarray) -> np.ndarray:
        k = np.ceil((np.asarray(x, dtype=float) - self.lower) / self.law.h - 1e-9).astype(np.int64)
        inside = np.clip(k, 0, len(self.law.sf) - 1)
        return np.where(k < 0, 1.0, np.where(k >= len(self.law.sf), 0.0, self.law.sf[inside]))

    def isf(self, s: np.ndarray) -> np.ndarray:
        # smallest lattice point whose survival is at most s (S decreases along the lattice)
        k = np.searchsorted(-self.law.sf, -np.asarray(s, dtype=float), side="left")
        return self.lower + self.law.h * np.minimum(k, len(self.law.sf) - 1)

    def ppf(self, u: np.ndarray) -> np.ndarray:
        return self.isf(1.0 - np.asarray(u, dtype=float))

    def quantile_by_both(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.isf(s)

    def logcdf(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log1p(-np.minimum(self.sf(x), 1.0))

    def mean(self) -> float:
        return self._m

    def var(self) -> float:
        return self._v
