"""Summaries of latency PMFs and distances between two of them."""

from __future__ import annotations

import math

import numpy as np

from jitterscope.ptts.exact import Distribution
from jitterscope.ptts.results import Distances

PERCENTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99, "p999": 0.999}
_EPS = 1e-12


def percentile(dist: Distribution, q: float) -> int:
    """Smallest latency t with P(L <= t) >= q (ticks)."""
    c = dist.cdf()
    i = int(np.searchsorted(c, q - _EPS, side="left"))
    return int(dist.times[min(i, len(dist.times) - 1)])


def miss_probability(dist: Distribution, deadline: int) -> float:
    """P(L > deadline): a latency equal to the deadline meets it."""
    return float(dist.probs[dist.times > deadline].sum())


def summary(dist: Distribution) -> dict[str, float]:
    """mean, min, max and percentiles, in ticks."""
    out = {
        "mean": float(np.dot(dist.times.astype(np.float64), dist.probs) / dist.probs.sum()),
        "min": int(dist.times[0]),
        "max": int(dist.times[-1]),
    }
    for k, q in PERCENTILES.items():
        out[k] = percentile(dist, q)
    return out


def empirical(samples: np.ndarray) -> Distribution:
    t, c = np.unique(np.asarray(samples, dtype=np.int64), return_counts=True)
    return Distribution(t, c / c.sum())


def distances(a: Distribution, b: Distribution) -> Distances:
    """Kolmogorov distance sup_t |F_a(t) - F_b(t)| and total variation 1/2 sum |p_a - p_b|."""
    t = np.union1d(a.times, b.times)
    pa = np.zeros(len(t))
    pb = np.zeros(len(t))
    pa[np.searchsorted(t, a.times)] = a.probs
    pb[np.searchsorted(t, b.times)] = b.probs
    return {
        "kolmogorov": float(np.max(np.abs(np.cumsum(pa) - np.cumsum(pb)))),
        "total_variation": float(0.5 * np.abs(pa - pb).sum()),
    }


def dkw_band(n: int, alpha: float = 0.05) -> float:
    """Dvoretzky-Kiefer-Wolfowitz: with prob. 1-alpha the empirical CDF of n iid samples is within this of the true."""
    return math.sqrt(math.log(2 / alpha) / (2 * n)) if n > 0 else float("inf")
