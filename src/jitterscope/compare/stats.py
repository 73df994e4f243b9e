"""The statistics behind `compare`: rates, durations, totals, multiple testing.

* Rates — the exact conditional test for two Poisson rates (Przyborowski &
  Wilenski 1940; see Gu, Ng, Tang & Schucany 2008, "Testing the ratio of two
  Poisson rates", Biometrical Journal 50(2)).  Given k1 events in exposure t1
  and k2 in t2, under equal rates k2 | k1+k2 ~ Binomial(k1+k2, t2/(t1+t2)).
  The rate-ratio confidence interval maps the Clopper-Pearson interval of that
  binomial proportion back to a ratio.
* Per-occurrence durations — the Mann-Whitney U test (Mann & Whitney 1947),
  robust to the heavy tails of detour times, with Cliff's delta as effect size
  (Cliff 1993, "Dominance statistics", Psychological Bulletin 114(3)):
  P(new > base) - P(new < base), in [-1, 1].
* Total noise per CPU — Mann-Whitney on the noise (ppm) of equal time blocks
  of each run, so a few long detours cannot dominate and time-correlated
  noise is compared at the block scale.
* Overdispersion — detours of one source come in bursts (a process that ran
  for 50 ms, a storm of interrupts), which the Poisson test would read as many
  independent events.  The source's counts in equal time blocks give Pearson's
  dispersion estimate phi = X^2 / (blocks - 2); when phi > 1 the rate test is
  the quasi-Poisson F test: likelihood-ratio deviance / phi against
  F(1, blocks - 2) (Wedderburn 1974, Biometrika 61(3); McCullagh & Nelder 1989,
  "Generalized Linear Models", 2nd ed., sec. 6.2 and 9.2).
* Multiple testing — Benjamini-Hochberg false discovery rate over every test
  of one comparison (Benjamini & Hochberg 1995, JRSS B 57(1)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

MIN_DURATION_SAMPLES = 5


@dataclass
class RateTest:
    ratio: float  # new rate / base rate (inf when base had none)
    ci: tuple[float, float]
    p: float


@dataclass
class DurationTest:
    median_ratio: float  # new median / base median
    cliffs_delta: float  # P(new > base) - P(new < base)
    p: float


def poisson_rate_test(k_base: int, t_base: float, k_new: int, t_new: float, confidence: float = 0.95) -> RateTest:
    """Two-sided exact conditional test of equal Poisson rates (see module docstring)."""
    n = k_base + k_new
    if n == 0 or t_base <= 0 or t_new <= 0:
        return RateTest(float("nan"), (float("nan"), float("nan")), 1.0)
    share = t_new / (t_base + t_new)
    res = stats.binomtest(k_new, n, share)
    lo, hi = res.proportion_ci(confidence_level=confidence, method="exact")

    def to_ratio(pi: float) -> float:
        return (pi / (1 - pi)) * (t_base / t_new) if pi < 1 else float("inf")

    rate_base, rate_new = k_base / t_base, k_new / t_new
    ratio = rate_new / rate_base if rate_base > 0 else float("inf")
    return RateTest(ratio, (to_ratio(lo), to_ratio(hi)), float(res.pvalue))


def dispersion(blocks_base: np.ndarray, blocks_new: np.ndarray) -> float:
    """Pearson dispersion of per-block counts around each run's own mean rate."""
    x2 = 0.0
    for b in (blocks_base, blocks_new):
        mu = b.mean() if len(b) else 0.0
        if mu > 0:
            x2 += float(((b - mu) ** 2).sum() / mu)
    df = len(blocks_base) + len(blocks_new) - 2
    return x2 / df if df > 0 else 1.0


def rate_test(
    k_base: int,
    t_base: float,
    k_new: int,
    t_new: float,
    blocks_base: np.ndarray | None = None,
    blocks_new: np.ndarray | None = None,
) -> tuple[RateTest, float]:
    """Rate test with overdispersion: exact conditional test when the per-block
    counts are not overdispersed, quasi-Poisson F test when they are.  Returns
    the test and the dispersion used."""
    exact = poisson_rate_test(k_base, t_base, k_new, t_new)
    if blocks_base is None or blocks_new is None:
        return exact, 1.0
    phi = dispersion(blocks_base, blocks_new)
    if phi <= 1.0 or k_base + k_new == 0:
        return exact, max(phi, 0.0)
    n, t = k_base + k_new, t_base + t_new
    dev = 0.0
    for k, ti in ((k_base, t_base), (k_new, t_new)):
        if k > 0:
            dev += 2.0 * k * np.log(k / (n * ti / t))
    df = len(blocks_base) + len(blocks_new) - 2
    p = float(stats.f.sf(dev / phi, 1, df))
    return RateTest(exact.ratio, exact.ci, max(p, exact.p)), phi


def duration_test(base: np.ndarray, new: np.ndarray) -> DurationTest | None:
    """Mann-Whitney U on per-occurrence durations; None with too few samples."""
    if len(base) < MIN_DURATION_SAMPLES or len(new) < MIN_DURATION_SAMPLES:
        return None
    u_new, p = stats.mannwhitneyu(new, base, alternative="two-sided", method="asymptotic")
    delta = 2.0 * float(u_new) / (len(new) * len(base)) - 1.0
    mb = float(np.median(base))
    return DurationTest(float(np.median(new)) / mb if mb > 0 else float("inf"), delta, float(p))


def block_test(base_blocks: np.ndarray, new_blocks: np.ndarray) -> float:
    """p-value of Mann-Whitney on per-block noise; 1.0 with too few blocks."""
    if len(base_blocks) < 3 or len(new_blocks) < 3:
        return 1.0
    if np.all(base_blocks == base_blocks[0]) and np.array_equal(np.unique(new_blocks), np.unique(base_blocks)):
        return 1.0
    return float(stats.mannwhitneyu(new_blocks, base_blocks, alternative="two-sided", method="asymptotic").pvalue)


def bh_adjust(pvalues: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), same order (scipy.stats.false_discovery_control).
    A p-value that could not be computed (NaN) counts as 1."""
    if not pvalues:
        return []
    p = np.nan_to_num(np.asarray(pvalues, dtype=float), nan=1.0)
    return [float(q) for q in stats.false_discovery_control(p, method="bh")]
