"""Per-phase delay distributions (seconds), with the survival-side functions the
order-statistic engine needs.

Every distribution offers `sf`, `isf` (accurate in the upper tail, where maxima
over many nodes live), `ppf`/`logcdf` (accurate in the lower tail, where small N
lives), `sample`, `mean`, `var`, the lowest point of its support and any atoms
(points of positive mass, where integrals must be split).  scipy.stats frozen
distributions are wrapped as they are; bernoulli, zero-inflated and spliced
(empirical body + generalized-Pareto tail) are written out here.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from jitterscope.simulate.results import DelayJson


def _scipy(name: str) -> ModuleType:
    """scipy.stats or scipy.integrate, imported when a delay first needs them (1-2 s here): a fit that no family
    passes (sync jitter's, as a rule) makes an empirical delay only, in a process that waited for this import
    after its program ended."""
    return importlib.import_module(f"scipy.{name}")


Array = np.ndarray


class Delay:
    """A per-phase delay distribution.  Subclasses implement the abstract parts."""

    family: str
    params: dict[str, float]

    # --- to implement -----------------------------------------------------
    def sf(self, x: Array) -> Array:
        raise NotImplementedError

    def isf(self, s: Array) -> Array:
        raise NotImplementedError

    def ppf(self, u: Array) -> Array:
        raise NotImplementedError

    def logcdf(self, x: Array) -> Array:
        raise NotImplementedError

    def mean(self) -> float:
        raise NotImplementedError

    def var(self) -> float:
        raise NotImplementedError

    lower: float = -np.inf  # infimum of the support
    atoms: tuple[float, ...] = ()  # points with positive mass

    # --- shared -------------------------------------------------------------
    def log_cdf_safe(self, x: Array) -> Array:
        """log F(x), accurate at both ends: log1p(-S) where S is small (upper tail,
        where log(cdf) would round to 0), logcdf where F is small."""
        x = np.asarray(x, dtype=float)
        s = self.sf(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(s < 0.5, np.log1p(-np.minimum(s, 0.5)), self.logcdf(x))
        return out

    def quantile_by_both(self, s: Array, u: Array) -> Array:
        """Quantile at survival level s = 1 - u, using isf(s) for small s and ppf(u)
        for small u, so neither end loses its digits."""
        s = np.asarray(s, dtype=float)
        u = np.asarray(u, dtype=float)
        with np.errstate(all="ignore"):
            return np.where(s < 0.5, self.isf(np.minimum(s, 0.5)), self.ppf(np.minimum(u, 0.5)))

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> Array:
        u = rng.random(size)
        return self.quantile_by_both(1.0 - u, u)

    def describe(self) -> str:
        inner = ", ".join(f"{k}={_fmt_param(k, v)}" for k, v in self.params.items())
        return f"{self.family}({inner})"

    def to_json(self) -> DelayJson:
        return {"family": self.family, "params": dict(self.params)}


def _fmt_param(key: str, value: float) -> str:
    if key in ("shape", "sigma", "alpha", "p", "xi", "zero_fraction", "tail_fraction", "exceedance_fraction"):
        return f"{value:.4g}"
    a = abs(value)
    if a >= 1 or a == 0:
        return f"{value:.4g}s"
    if a >= 1e-3:
        return f"{value * 1e3:.4g}ms"
    if a >= 1e-6:
        return f"{value * 1e6:.4g}us"
    return f"{value * 1e9:.4g}ns"


@dataclass
class ScipyDelay(Delay):
    """A scipy.stats frozen continuous distribution."""

    family: str
    params: dict[str, float]
    dist: Any = field(repr=False)

    def __post_init__(self) -> None:
        lo = float(self.dist.support()[0])
        self.lower = lo

    def sf(self, x: Array) -> Array:
        return self.dist.sf(x)

    def isf(self, s: Array) -> Array:
        return self.dist.isf(s)

    def ppf(self, u: Array) -> Array:
        return self.dist.ppf(u)

    def logcdf(self, x: Array) -> Array:
        return self.dist.logcdf(x)

    def mean(self) -> float:
        return float(self.dist.mean())

    def var(self) -> float:
        return float(self.dist.var())


@dataclass
class Bernoulli(Delay):
    """`delay` with probability p, else 0."""

    p: float
    delay: float
    family: str = "bernoulli"

    def __post_init__(self) -> None:
        self.params = {"p": self.p, "delay": self.delay}
        self.lower = 0.0
        self.atoms = (0.0, self.delay)

    def sf(self, x: Array) -> Array:
        x = np.asarray(x, dtype=float)
        return np.where(x < 0, 1.0, np.where(x < self.delay, self.p, 0.0))

    def logcdf(self, x: Array) -> Array:
        x = np.asarray(x, dtype=float)
        return np.where(x < 0, -np.inf, np.where(x < self.delay, np.log1p(-self.p), 0.0))

    def isf(self, s: Array) -> Array:
        s = np.asarray(s, dtype=float)
        return np.where(s >= self.p, 0.0, self.delay)

    def ppf(self, u: Array) -> Array:
        u = np.asarray(u, dtype=float)
        return np.where(u <= 1.0 - self.p, 0.0, self.delay)

    def quantile_by_both(self, s: Array, u: Array) -> Array:
        return self.isf(s)  # exact either way: two values, compared against p

    def mean(self) -> float:
        return self.p * self.delay

    def var(self) -> float:
        return self.p * (1 - self.p) * self.delay**2


@dataclass
class ZeroInflated(Delay):
    """0 with probability 1-q, else a draw of `base` (clipped at 0).

    Used for phases that no noise touched (a fitted model's zero fraction) and for
    a synchronization round, which a per-phase delay hits only sometimes."""

    base: Delay
    q: float

    def __post_init__(self) -> None:
        self.family = self.base.family
        self.params = {**self.base.params, "zero_fraction": 1.0 - self.q}
        self.lower = 0.0
        self.atoms = (0.0, *[a for a in self.base.atoms if a > 0])
        self._s0 = float(self.base.sf(np.array(0.0)))  # P(base > 0)

    def describe(self) -> str:
        return f"{self.base.describe()} in {self.q:.4g} of phases, else 0"

    def sf(self, x: Array) -> Array:
        x = np.asarray(x, dtype=float)
        return np.where(x < 0, 1.0, self.q * self.base.sf(np.maximum(x, 0.0)))

    def logcdf(self, x: Array) -> Array:
        x = np.asarray(x, dtype=float)
        xp = np.maximum(x, 0.0)
        with np.errstate(divide="ignore"):
            # F = (1-q) + q*F_base, summed in log space so small values keep their digits
            lf = np.logaddexp(np.log1p(-self.q) if self.q < 1 else -np.inf, np.log(self.q) + self.base.log_cdf_safe(xp))
        return np.where(x < 0, -np.inf, lf)

    def isf(self, s: Array) -> Array:
        s = np.asarray(s, dtype=float)
        with np.errstate(all="ignore"):
            inner = self.base.isf(np.clip(s / self.q, 0.0, 1.0))
        return np.where(s >= self.q * self._s0, 0.0, np.maximum(inner, 0.0))

    def ppf(self, u: Array) -> Array:
        u = np.asarray(u, dtype=float)
        return self.isf(1.0 - u)

    def quantile_by_both(self, s: Array, u: Array) -> Array:
        return self.isf(s)  # small values are 0 here; only the upper side needs digits

    def mean(self) -> float:
        return self.q * _positive_part_moment(self.base, 1)

    def var(self) -> float:
        m2 = self.q * _positive_part_moment(self.base, 2)
        return m2 - self.mean() ** 2


def _positive_part_moment(d: Delay, k: int) -> float:
    """E[max(D,0)^k] by integrating k x^(k-1) S(x) over x > 0."""
    if d.lower >= 0 and k == 1:
        return d.mean()
    if d.lower >= 0 and k == 2:
        return d.var() + d.mean() ** 2
    hi = float(d.isf(np.asarray(1e-15)))
    if hi <= 0:
        return 0.0
    val, _ = _scipy("integrate").quad(lambda x: k * x ** (k - 1) * float(d.sf(x)), 0.0, hi, limit=200)
    return float(val)


@dataclass
class SplicedTail(Delay):
    """Empirical distribution below a threshold u, generalized-Pareto tail above it.

    P(X > x) = fraction of data above x for x < u, and zeta * GPD_sf(x - u) above,
    where zeta is the fraction of data above u (the peaks-over-threshold model,
    Davison & Smith 1990, J. R. Stat. Soc. B 52(3):393-442).  Unlike the empirical
    distribution alone, its maxima are not capped at the largest sample."""

    data: Array
    threshold: float
    xi: float
    scale: float
    family: str = "empirical+gpd-tail"

    def __post_init__(self) -> None:
        self.data = np.sort(np.asarray(self.data, dtype=float))
        n = len(self.data)
        self.zeta = float(np.count_nonzero(self.data > self.threshold)) / n
        self.params = {
            "threshold": self.threshold,
            "xi": self.xi,
            "scale": self.scale,
            "exceedance_fraction": self.zeta,
        }
        if self.zeta == 0:
            self.family = "empirical"
            self.params = {"samples": float(n)}
        self.lower = float(self.data[0])
        body = self.data[self.data <= self.threshold]
        self._body = body
        self.atoms = tuple(np.unique(body).tolist()[:1])

    @functools.cached_property
    def gpd(self) -> Any:
        """The tail's scipy.stats.genpareto, made when first used (a sync run's fit makes its delay and no more)."""
        return _scipy("stats").genpareto(self.xi, loc=0.0, scale=self.scale)

    def describe(self) -> str:
        if self.zeta == 0:
            return f"empirical distribution of {len(self.data)} measured delays"
        return (
            f"empirical below {_fmt_param('t', self.threshold)}, generalized-Pareto tail above "
            f"(xi={self.xi:.4g}, scale={_fmt_param('s', self.scale)}, {self.zeta:.3g} of phases)"
        )

    def sf(self, x: Array) -> Array:
        x = np.asarray(x, dtype=float)
        n = len(self.data)
        emp = (n - np.searchsorted(self.data, x, side="right")) / n
        tail = self.zeta * self.gpd.sf(np.maximum(x - self.threshold, 0.0))
        return np.where(x < self.threshold, emp, tail)

    def logcdf(self, x: Array) -> Array:
        with np.errstate(divide="ignore"):
            return np.log(np.maximum(1.0 - self.sf(x), 0.0))

    def isf(self, s: Array) -> Array:
        s = np.asarray(s, dtype=float)
        n = len(self.data)
        # smallest data value with (count above it)/n <= s
        k = np.clip(np.ceil(n * (1.0 - s) - 1e-9).astype(np.int64) - 1, 0, n - 1)
        emp = self.data[k]
        with np.errstate(all="ignore"):
            tail = self.threshold + self.gpd.isf(np.clip(s / self.zeta, 0, 1)) if self.zeta > 0 else emp
        return np.where(s < self.zeta, tail, np.minimum(emp, self.threshold))

    def ppf(self, u: Array) -> Array:
        return self.isf(1.0 - np.asarray(u, dtype=float))

    def quantile_by_both(self, s: Array, u: Array) -> Array:
        return self.isf(s)

    def mean(self) -> float:
        n = len(self.data)
        return float(self._body.sum() / n + self.zeta * (self.threshold + float(self.gpd.mean())))

    def var(self) -> float:
        n = len(self.data)
        t = self.threshold
        m2_tail = float(self.gpd.var()) + (t + float(self.gpd.mean())) ** 2
        return float((self._body**2).sum() / n + self.zeta * m2_tail - self.mean() ** 2)

    def expected_max(self, n_nodes: float) -> float:
        """Exact body (a step function) plus a quadrature over the tail."""
        xs = np.unique(self._body)
        total = float(xs[0]) if len(xs) else self.threshold
        if len(xs):
            edges = np.append(xs, self.threshold)
            widths = np.diff(edges)
            logf = self.log_cdf_safe(xs)
            total += float(np.sum(widths * -np.expm1(n_nodes * logf)))
        if self.zeta > 0:

            def f(x: float) -> float:
                s = self.zeta * float(self.gpd.sf(x - self.threshold))
                return float(-np.expm1(n_nodes * np.log1p(-s)))

            pts = [
                self.threshold + float(self.gpd.isf(min(1.0, q / self.zeta)))
                for q in (self.zeta, 1e-3, 1e-6, 1e-9, 1e-12, 1e-15)
                if q <= self.zeta
            ]
            pts = sorted(set(pts + [self.threshold]))
            for a, b in zip(pts, pts[1:] + [np.inf]):
                if b > a:
                    v, _ = _scipy("integrate").quad(f, a, b, limit=200)
                    total += v
        return total


# ----------------------------------------------------------------------------
# Families by name (seconds throughout)


def normal(mean: float, sd: float) -> Delay:
    return ScipyDelay("normal", {"mean": mean, "sd": sd}, _scipy("stats").norm(loc=mean, scale=sd))


def lognormal(median: float, sigma: float) -> Delay:
    return ScipyDelay("lognormal", {"median": median, "sigma": sigma}, _scipy("stats").lognorm(sigma, scale=median))


def exponential(mean: float) -> Delay:
    return ScipyDelay("exponential", {"mean": mean}, _scipy("stats").expon(scale=mean))


def gamma(shape: float, scale: float) -> Delay:
    return ScipyDelay("gamma", {"shape": shape, "scale": scale}, _scipy("stats").gamma(shape, scale=scale))


def weibull(shape: float, scale: float) -> Delay:
    return ScipyDelay("weibull", {"shape": shape, "scale": scale}, _scipy("stats").weibull_min(shape, scale=scale))


def pareto(alpha: float, scale: float) -> Delay:
    """Pareto type I: S(x) = (scale/x)^alpha for x >= scale, so every phase is delayed by at least `scale`
    (not Lomax / Pareto II, which starts at 0)."""
    return ScipyDelay("pareto", {"alpha": alpha, "scale": scale}, _scipy("stats").pareto(alpha, scale=scale))


def uniform(low: float, high: float) -> Delay:
    """Uniform on [low, high]; E[max of N] = low + (high - low) N / (N + 1)."""
    return ScipyDelay("uniform", {"low": low, "high": high}, _scipy("stats").uniform(loc=low, scale=high - low))


def bernoulli(p: float, delay: float) -> Delay:
    return Bernoulli(p, delay)


@dataclass
class Scaled(Delay):
    """`factor` times a draw of `base` (factor > 0)."""

    base: Delay
    factor: float

    def __post_init__(self) -> None:
        self.family = self.base.family
        self.params = {
            k: (v if k in ("shape", "sigma", "alpha", "p", "xi") else v * self.factor)
            for k, v in self.base.params.items()
        }
        self.lower = self.base.lower * self.factor
        self.atoms = tuple(a * self.factor for a in self.base.atoms)

    def sf(self, x: Array) -> Array:
        return self.base.sf(np.asarray(x, dtype=float) / self.factor)

    def isf(self, s: Array) -> Array:
        return self.base.isf(s) * self.factor

    def ppf(self, u: Array) -> Array:
        return self.base.ppf(u) * self.factor

    def logcdf(self, x: Array) -> Array:
        return self.base.logcdf(np.asarray(x, dtype=float) / self.factor)

    def log_cdf_safe(self, x: Array) -> Array:
        return self.base.log_cdf_safe(np.asarray(x, dtype=float) / self.factor)

    def quantile_by_both(self, s: Array, u: Array) -> Array:
        return self.base.quantile_by_both(s, u) * self.factor

    def mean(self) -> float:
        return self.base.mean() * self.factor

    def var(self) -> float:
        return self.base.var() * self.factor**2
