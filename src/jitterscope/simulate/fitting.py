"""Fit candidate families to per-phase delays and rank them by goodness of fit.

Families (fitted to the positive delays by maximum likelihood, location 0 for the
positive families): normal, lognormal, gamma, exponential, Weibull; phases that
no noise touched are a separate zero fraction.  Gamma's shape uses Minka's
closed-form start and Newton steps (T. Minka, "Estimating a Gamma distribution",
2002); Weibull's shape solves its profile-likelihood equation by Newton.  A
generalized-Pareto distribution is fitted to the exceedances over a high
threshold (peaks over threshold, Davison & Smith 1990) with the estimator of
Zhang & Stephens (Technometrics 51(3):316-325, 2009).

Goodness of fit: Kolmogorov-Smirnov D and Anderson-Darling A^2 (Stephens,
JASA 69:730-737, 1974).  The textbook p-values of both assume parameters fixed
in advance; with parameters estimated from the same data they are far too
large (Lilliefors, JASA 62:399-402, 1967).  So p-values come from a parametric
bootstrap: draw samples from the fitted model, refit each, recompute the
statistic, p = (1 + #{T* >= T}) / (B + 1) (Stute, Gonzalez Manteiga & Presedo
Quindimil, JASA 88:1993; the procedure of scipy.stats.goodness_of_fit, done
here with vectorized fits so it takes seconds).  Every fit is vectorized over
rows so the B refits run as array operations.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from jitterscope import childgroup
from jitterscope.errors import JitterscopeError
from jitterscope.simulate import distributions as D
from jitterscope.simulate.enough import MIN_POSITIVE, too_few
from jitterscope.simulate.results import FamilyJson, FitData, TailFit

FAMILIES = ("normal", "lognormal", "gamma", "exponential", "weibull")
# A Newton step of the Weibull shape this small (relative) is the last that matters: the next is its square,
# below rounding, and the steps after it jitter by a few ulps (measured: 1e-1, 4e-2, 1e-3, 5e-7, 1e-13, then 7e-16)
WEIBULL_STEP = 1e-12
ALPHA = 0.05


# ---------------------------------------------------------------------------
# vectorized fits: X has shape (B, n), positive; each returns a dict of (B,) arrays


def _fit_normal(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"mean": x.mean(1), "sd": x.std(1)}


def _fit_lognormal(x: np.ndarray) -> dict[str, np.ndarray]:
    lx = np.log(x)
    return {"median": np.exp(lx.mean(1)), "sigma": lx.std(1)}


def _fit_exponential(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"mean": x.mean(1)}


def _fit_gamma(x: np.ndarray) -> dict[str, np.ndarray]:
    m = x.mean(1)
    s = np.maximum(np.log(m) - np.log(x).mean(1), 1e-12)
    k = (3 - s + np.sqrt((s - 3) ** 2 + 24 * s)) / (12 * s)
    for _ in range(6):
        step = (np.log(k) - special.digamma(k) - s) / (1 / k - special.polygamma(1, k))
        k = np.maximum(k - step, k / 10)
    return {"shape": k, "scale": m / k}


def _fit_weibull(x: np.ndarray) -> dict[str, np.ndarray]:
    top = x.max(1, keepdims=True)
    ly = np.log(x / top)  # <= 0: y^k stays in (0, 1] for every k > 0
    mean_ly = ly.mean(1)
    sd = ly.std(1)
    k = np.where(sd > 0, math.pi / (math.sqrt(6) * np.maximum(sd, 1e-300)), 1.0)
    for _ in range(40):
        yk = np.exp(k[:, None] * ly)
        s0, s1, s2 = yk.sum(1), (yk * ly).sum(1), (yk * ly * ly).sum(1)
        g = s1 / s0 - 1 / k - mean_ly
        dg = (s2 * s0 - s1 * s1) / (s0 * s0) + 1 / (k * k)
        new = k - g / dg
        new = np.where(new > 0, new, k / 2)
        # Newton converges quadratically: once no row moves by more than WEIBULL_STEP, more steps change nothing
        # but rounding (they were 40 always, most of a fit's Weibull time)
        done = bool(np.all(np.abs(new - k) <= WEIBULL_STEP * np.abs(k)))
        k = new
        if done:
            break
    yk = np.exp(k[:, None] * ly)
    scale = top[:, 0] * yk.mean(1) ** (1 / k)
    return {"shape": k, "scale": scale}


def _fit_gpd(y: np.ndarray) -> dict[str, np.ndarray]:
    """Zhang & Stephens (2009) estimator of the GPD on exceedances y > 0."""
    y = np.sort(y, axis=1)
    b, n = y.shape
    m = 20 + int(math.sqrt(n))
    xn = y[:, -1]
    xq = y[:, max(int(n / 4 + 0.5) - 1, 0)]
    j = np.arange(1, m + 1)
    theta = 1 / xn[:, None] + (1 - np.sqrt(m / (j - 0.5)))[None, :] / (3 * xq[:, None])
    theta = np.where(theta == 0, 1e-300, theta)
    out_k = np.empty((b, m))
    step = max(1, 4_000_000 // (m * n))
    for lo in range(0, b, step):
        th = theta[lo : lo + step]
        out_k[lo : lo + step] = -np.log1p(-th[:, :, None] * y[lo : lo + step, None, :]).mean(2)
    ll = n * (np.log(theta / out_k) + out_k - 1)
    with np.errstate(over="ignore"):  # exp overflow -> weight 0, as intended
        w = 1 / np.exp(ll[:, None, :] - ll[:, :, None]).sum(2)
    th_hat = (theta * w).sum(1) / w.sum(1)
    k_hat = -np.log1p(-th_hat[:, None] * y).mean(1)
    return {"xi": -k_hat, "scale": k_hat / th_hat}


# log CDF and log SF of each family at x (B, n), parameters (B,)


def _logs(family: str, p: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    col = {k: v[:, None] for k, v in p.items()}
    with np.errstate(all="ignore"):
        if family == "normal":
            z = (x - col["mean"]) / col["sd"]
            return special.log_ndtr(z), special.log_ndtr(-z)
        if family == "lognormal":
            z = (np.log(x) - np.log(col["median"])) / col["sigma"]
            return special.log_ndtr(z), special.log_ndtr(-z)
        if family == "exponential":
            z = x / col["mean"]
            return np.log(-np.expm1(-z)), -z
        if family == "gamma":
            return _gamma_logs(col["shape"], x / col["scale"])
        if family == "weibull":
            z = (x / col["scale"]) ** col["shape"]
            return np.log(-np.expm1(-z)), -z
        if family == "gpd":
            lsf = _gpd_logsf(col["xi"], x / col["scale"])
            return np.log(-np.expm1(lsf)), lsf
    raise AssertionError(family)


GAMMA_UPPER_FROM = 0.9  # the CDF above which the SF is the upper incomplete gamma function's, not 1 - CDF


def _gamma_logs(shape: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log CDF and log SF of the standard gamma of `shape` (broadcast against z) at z.  Up to a CDF of
    GAMMA_UPPER_FROM the SF is 1 - CDF (it loses at most one digit of sixteen); above it both come from the upper
    incomplete gamma function, as scipy.stats.gamma's do in its upper tail.  That function, 4x the lower one's
    cost on delays (its continued fraction), was most of a gamma fit's time when it ran at every point."""
    cdf = special.gammainc(shape, z)
    lcdf, lsf = np.log(cdf), np.log1p(-cdf)
    upper = cdf > GAMMA_UPPER_FROM
    if upper.any():
        sf = special.gammaincc(np.broadcast_to(shape, z.shape)[upper], z[upper])
        lcdf[upper], lsf[upper] = np.log1p(-sf), np.log(sf)
    return lcdf, lsf


def _gpd_logsf(xi: np.ndarray, z: np.ndarray) -> np.ndarray:
    """log P(Z > z) of the standard GPD of shape xi at z >= 0: -log1p(xi z) / xi (-z at xi = 0; -inf past the end
    of the support, 1 + xi z <= 0; NaN for a NaN xi or z), as scipy.stats.genpareto, whose import (a second) the
    fit's process would otherwise wait for when its program keeps every CPU busy."""
    with np.errstate(all="ignore"):
        xz = xi * z
        inside = np.where(xi == 0, -z, -np.log1p(xz) / np.where(xi == 0, 1, xi))
        return np.where(np.isnan(xz), np.nan, np.where(1 + xz > 0, inside, -np.inf))


def _draw(family: str, p: dict[str, float], rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    if family == "normal":
        return rng.normal(p["mean"], p["sd"], shape)
    if family == "lognormal":
        return p["median"] * np.exp(rng.normal(0, p["sigma"], shape))
    if family == "exponential":
        return rng.exponential(p["mean"], shape)
    if family == "gamma":
        return rng.gamma(p["shape"], p["scale"], shape)
    if family == "weibull":
        return p["scale"] * rng.weibull(p["shape"], shape)
    if family == "gpd":
        return p["scale"] * -special.boxcox1p(-rng.random(shape), -p["xi"])  # the quantile function at uniforms
    raise AssertionError(family)


_FITTERS: dict[str, Callable[[np.ndarray], dict[str, np.ndarray]]] = {
    "normal": _fit_normal,
    "lognormal": _fit_lognormal,
    "gamma": _fit_gamma,
    "exponential": _fit_exponential,
    "weibull": _fit_weibull,
    "gpd": _fit_gpd,
}


def gof_statistics(family: str, p: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(KS D, AD A^2) per row of x (B, n) against the family with row parameters p."""
    x = np.sort(x, axis=1)
    n = x.shape[1]
    lcdf, lsf = _logs(family, p, x)
    lcdf = np.maximum(lcdf, -745.0)  # log of the smallest double: keeps A^2 finite
    lsf = np.maximum(lsf, -745.0)
    u = np.exp(lcdf)
    i = np.arange(1, n + 1)
    ks = np.maximum((i / n - u).max(1), (u - (i - 1) / n).max(1))
    ad = -n - ((2 * i - 1) * (lcdf + lsf[:, ::-1])).sum(1) / n
    return ks, ad


# ---------------------------------------------------------------------------


@dataclass
class FamilyFit:
    family: str
    params: dict[str, float]  # seconds / dimensionless
    ks: float
    ks_p: float
    ad: float
    ad_p: float
    fits: bool = False
    rank: int = 0
    n: int = 0

    def delay(self) -> D.Delay:
        p = self.params
        return {
            "normal": lambda: D.normal(p["mean"], p["sd"]),
            "lognormal": lambda: D.lognormal(p["median"], p["sigma"]),
            "gamma": lambda: D.gamma(p["shape"], p["scale"]),
            "exponential": lambda: D.exponential(p["mean"]),
            "weibull": lambda: D.weibull(p["shape"], p["scale"]),
        }[self.family]()

    def to_json(self) -> FamilyJson:
        return {
            "family": self.family,
            "params": self.params,
            "ks": {"statistic": self.ks, "p_value": self.ks_p},
            "ad": {"statistic": self.ad, "p_value": self.ad_p},
            "fits": self.fits,
            "rank": self.rank,
        }


@dataclass
class Fit:
    """Everything `fit` reports, plus the model `fit:RUN` simulates."""

    delays_s: np.ndarray = field(repr=False)  # all per-phase delays (zeros included)
    phase_s: float
    zero_fraction: float
    families: list[FamilyFit]
    tail: TailFit | None
    replicates: int
    gof_sample: int
    best: D.Delay
    best_name: str
    verdict: str
    any_fits: bool
    source: str = ""
    cpus: list[int] | list[str] = field(default_factory=list)  # CPUs, or host:cpu nodes of a cluster run

    def to_json(self) -> FitData:
        d = self.delays_s
        pos = d[d > 0]
        return {
            "run": self.source,
            "phase_s": self.phase_s,
            "delays": {
                "count": int(len(d)),
                "zero_fraction": self.zero_fraction,
                "mean_s": float(d.mean()),
                "sd_s": float(d.std(ddof=1)) if len(d) > 1 else 0.0,
                "p50_s": float(np.quantile(d, 0.5)),
                "p99_s": float(np.quantile(d, 0.99)),
                "max_s": float(d.max()),
                "positive": int(len(pos)),
                "cpus": self.cpus,
            },
            "gof": {
                "method": "parametric bootstrap with refitting (p-values valid for estimated parameters)",
                "replicates": self.replicates,
                "sample": self.gof_sample,
                "alpha": ALPHA,
                "subsample": self.gof_sample < len(pos),
                "tested_on": (
                    "all positive delays"
                    if self.gof_sample >= len(pos)
                    else f"a random subsample of {self.gof_sample} of the {len(pos)} positive delays, "
                    f"each family refitted to it (KS D, A2 and p-values are the subsample's; "
                    f"the parameters shown are fitted to all)"
                ),
                "fitted_to": "positive delays (zero-delay phases are the zero fraction)",
            },
            "families": [f.to_json() for f in self.families],
            "tail": self.tail,
            "best": {
                "family": self.best_name,
                "model": self.best.describe(),
                "fits": self.any_fits,
                "noise": self.best.to_json(),
            },
            "verdict": self.verdict,
        }


def _bootstrap_p(
    family: str,
    stat_ks: float,
    stat_ad: float,
    params: dict[str, float],
    n: int,
    replicates: int,
    rng: np.random.Generator,
    tick: Callable[[int], None] | None = None,
) -> tuple[float, float]:
    ge_ks = ge_ad = 0
    done = 0
    batch = max(1, 2_000_000 // max(n, 1))
    while done < replicates:
        b = min(batch, replicates - done)
        sim = _draw(family, params, rng, (b, n))
        if family not in ("normal",):
            sim = np.maximum(sim, np.finfo(float).tiny)
        p = _FITTERS[family](sim)
        ks, ad = gof_statistics(family, p, sim)
        ge_ks += int(np.count_nonzero(ks >= stat_ks))
        ge_ad += int(np.count_nonzero(~(ad < stat_ad)))  # NaN counts as "at least as bad"
        done += b
        if tick is not None:
            tick(b)
    return (1 + ge_ks) / (replicates + 1), (1 + ge_ad) / (replicates + 1)


def fit_family(
    family: str,
    x: np.ndarray,
    gof_x: np.ndarray,
    replicates: int,
    rng: np.random.Generator,
    tick: Callable[[int], None] | None = None,
) -> FamilyFit:
    """Fit one family to x; test it on gof_x (x or a subsample) with bootstrap p-values."""
    p_all = {k: float(v[0]) for k, v in _FITTERS[family](x[None, :]).items()}
    p_gof = _FITTERS[family](gof_x[None, :])
    ks, ad = gof_statistics(family, p_gof, gof_x[None, :])
    ks_p, ad_p = _bootstrap_p(
        family,
        float(ks[0]),
        float(ad[0]),
        {k: float(v[0]) for k, v in p_gof.items()},
        len(gof_x),
        replicates,
        rng,
        tick,
    )
    ff = FamilyFit(family, p_all, float(ks[0]), ks_p, float(ad[0]), ad_p, n=len(x))
    ff.fits = ks_p >= ALPHA and ad_p >= ALPHA
    return ff


def _fit_tail(
    x: np.ndarray, replicates: int, rng: np.random.Generator, gof_cap: int, tick: Callable[[int], None] | None = None
) -> TailFit | None:
    """GPD on exceedances over the 90th percentile (at least 30 of them), or None."""
    if len(x) < 60:
        return None
    q = 0.9 if len(x) * 0.1 >= 30 else 1 - 30 / len(x)
    u = float(np.quantile(x, q))
    y = x[x > u] - u
    if len(y) < 30:
        return None
    gy = y if len(y) <= gof_cap else rng.choice(y, gof_cap, replace=False)
    p = {k: float(v[0]) for k, v in _fit_gpd(y[None, :]).items()}
    pg = _fit_gpd(gy[None, :])
    ks, ad = gof_statistics("gpd", pg, gy[None, :])
    ks_p, ad_p = _bootstrap_p(
        "gpd", float(ks[0]), float(ad[0]), {k: float(v[0]) for k, v in pg.items()}, len(gy), replicates, rng, tick
    )
    return {
        "threshold_s": u,
        "quantile": q,
        "exceedances": int(len(y)),
        "xi": p["xi"],
        "scale_s": p["scale"],
        "ks": {"statistic": float(ks[0]), "p_value": ks_p},
        "ad": {"statistic": float(ad[0]), "p_value": ad_p},
        "fits": bool(ks_p >= ALPHA and ad_p >= ALPHA),
    }


# What `fit_delays` fits, each with a random stream of its own (so each can run in a process of its own, with the
# same result), and its CPU cost relative to the others, by which `fit_parts_forked` shares them out: measured on
# the sync jitter of pigz (23 k values, 100 replicates) on the 2-vCPU AMD EPYC guest, 2026-11-29, in ms.
PARTS = FAMILIES + ("tail",)
COST = {"gamma": 420, "tail": 340, "weibull": 230, "lognormal": 50, "normal": 40, "exponential": 30}
Parts = dict[str, FamilyFit | TailFit | None]


def fit_parts(
    pos: np.ndarray,
    parts: Sequence[str],
    replicates: int,
    seed: int,
    gof_cap: int,
    tick: Callable[[int], None] | None = None,
) -> Parts:
    """The named PARTS fitted to the positive delays `pos` (a family, or "tail": None when there is none)."""
    streams = np.random.SeedSequence(seed).spawn(1 + len(PARTS))
    gof_x = _gof_sample(pos, gof_cap, streams[0])
    out: Parts = {}
    for name in parts:
        rng = np.random.default_rng(streams[1 + PARTS.index(name)])
        if name == "tail":
            out[name] = _fit_tail(pos, replicates, rng, gof_cap, tick)
        else:
            out[name] = fit_family(name, pos, gof_x, replicates, rng, tick)
    return out


def _gof_sample(pos: np.ndarray, gof_cap: int, stream: np.random.SeedSequence) -> np.ndarray:
    return pos if len(pos) <= gof_cap else np.random.default_rng(stream).choice(pos, gof_cap, replace=False)


def fit_parts_forked(pos: np.ndarray, replicates: int, seed: int = 0, gof_cap: int = 2000, processes: int = 2) -> Parts:
    """`fit_parts` of every part, shared out (by COST, longest first, each to the least loaded) over `processes`
    processes: this one and ones forked from it (childgroup.fork_map: call it only from a process running one
    thread).  The same result as in one process."""
    shares: list[list[str]] = [[] for _ in range(max(1, min(processes, len(PARTS))))]
    load = [0] * len(shares)
    for name in sorted(PARTS, key=COST.__getitem__, reverse=True):
        k = load.index(min(load))
        shares[k].append(name)
        load[k] += COST[name]
    done: Parts = {}
    for got in childgroup.fork_map(lambda share: fit_parts(pos, share, replicates, seed, gof_cap), shares):
        done.update(got)
    return done


def positive_delays(delays_s: np.ndarray, phase_s: float) -> np.ndarray:
    """The delays a family is fitted to (those above 0); refused when too few."""
    d = np.asarray(delays_s, dtype=float)
    pos = d[d > 0]
    refused = too_few(len(pos), len(d), f"phases of {phase_s * 1e3:g} ms")
    if refused is not None:
        # fewer phases than a fit needs: shorter ones make more; enough phases but too few noisy: longer ones
        # each meet more noise (a run whose noise stretched its phases had 19 where its length promised 20)
        longer = "shorter" if len(d) < MIN_POSITIVE else "longer"
        raise JitterscopeError(f"{refused}: use a longer run or a {longer} --phase")
    return pos


def fit_delays(
    delays_s: np.ndarray,
    phase_s: float,
    replicates: int = 200,
    seed: int = 0,
    gof_cap: int = 2000,
    source: str = "",
    cpus: list[int] | list[str] | None = None,
    progress: Callable[[float], None] | None = None,
    parts: Parts | None = None,
) -> Fit:
    """Fit all families to per-phase delays (seconds) and choose a model for maxima.

    `progress` is told the fraction of the bootstrap done (the long part: a
    replicate per family and for the tail), e.g. a Progress bar's update.
    `parts`: the PARTS already fitted with these same replicates, seed and gof_cap (`fit_parts_forked`)."""
    d = np.asarray(delays_s, dtype=float)
    pos = positive_delays(d, phase_s)
    zero_fraction = 1.0 - len(pos) / len(d)
    done = [0]

    def tick(b: int) -> None:
        done[0] += b
        if progress is not None:
            progress(done[0] / (len(PARTS) * replicates))

    parts_given = parts is not None  # fitted elsewhere with these settings: no progress to tell
    if parts is None:
        parts = fit_parts(pos, PARTS, replicates, seed, gof_cap, tick)
    fams = [f for f in (parts[name] for name in FAMILIES) if isinstance(f, FamilyFit)]
    fams.sort(key=lambda f: (-f.ad_p, -f.ks_p, f.ad))
    for i, f in enumerate(fams):
        f.rank = i + 1
    tail = parts["tail"]
    assert not isinstance(tail, FamilyFit)
    if tail is None and not parts_given:
        tick(replicates)  # no tail to test: its share of the work is done
    top = fams[0]
    any_fits = any(f.fits for f in fams)
    zero_part = f"; {zero_fraction:.1%} of phases met no noise" if zero_fraction > 0 else ""

    def with_zeros(delay: D.Delay) -> D.Delay:
        return D.ZeroInflated(delay, 1.0 - zero_fraction) if zero_fraction > 0 else delay

    if top.fits:
        best, best_name = with_zeros(top.delay()), top.family
        verdict = f"{top.family} fits (KS p={top.ks_p:.3g}, AD p={top.ad_p:.3g}){zero_part}; simulate uses it"
    elif tail and tail["fits"]:
        best = D.SplicedTail(d, tail["threshold_s"], tail["xi"], tail["scale_s"])
        best_name = "empirical+gpd-tail"
        verdict = (
            f"no family fits the whole distribution (all p < {ALPHA}); the generalized-Pareto tail "
            f"fits the top {1 - tail['quantile']:.0%} (AD p={tail['ad']['p_value']:.3g}), so simulate "
            f"uses the measured delays with that tail"
        )
    else:
        # A wrong family misstates exactly the rare large delays that dominate maxima;
        # the measured delays themselves are a consistent estimate (capped at their max).
        best = D.SplicedTail(d, float(d.max()), 0.0, 1.0)
        best_name = "empirical"
        verdict = (
            f"no family fits (all p < {ALPHA}){', nor the tail' if tail else ''}; the closest is "
            f"{top.family} (AD={top.ad:.3g}); simulate uses the measured delays themselves, so maxima "
            f"are capped at the largest measured delay ({d.max() * 1e6:.4g} us): prefer the trace-driven "
            f"simulation of the run"
        )
    return Fit(
        d,
        phase_s,
        zero_fraction,
        fams,
        tail,
        replicates,
        min(len(pos), gof_cap),
        best,
        best_name,
        verdict,
        any_fits or bool(tail and tail["fits"]),
        source,
        cpus if cpus is not None else [],
    )
