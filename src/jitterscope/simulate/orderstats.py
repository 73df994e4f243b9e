"""The maximum of N i.i.d. delays, without drawing N of them.

The maximum M of N i.i.d. draws from F has CDF F(x)^N (e.g. David & Nagaraja,
*Order Statistics*, 3rd ed., Wiley 2003, eq. 2.1.1).  Sampling by inversion,
M = F^-1(U^(1/N)), fails for large N because U^(1/N) rounds to 1.0 once
1 - U^(1/N) < 2^-53 (N ~ 10^12 for typical U) and F^-1(1) = inf.  Here the
level is kept on the survival side instead:

    S(M) = 1 - U^(1/N) = -expm1(log(U) / N),      M = S^-1(...) = isf(...)

which keeps full relative precision for any N (log(U)/N is a tiny, exact-ish
number and expm1 keeps its digits).  For small N, where S(M) is close to 1 and
the lower tail matters, the CDF side F(M) = exp(log(U)/N) is used with ppf.

Moments come from integrating the survival function of M,

    E[M]   = int_0^inf P(M > x) dx - int_-inf^0 P(M <= x) dx
    E[M^2] = int_0^inf 2x P(M > x) dx + int_-inf^0 (-2x) P(M <= x) dx

with P(M <= x) = F(x)^N = exp(N log F(x)) and P(M > x) = -expm1(N log F(x)),
where log F(x) = log1p(-S(x)) in the upper tail, so nothing rounds to 0 or 1.
"""

from __future__ import annotations

import numpy as np

from jitterscope.simulate.distributions import Delay

_LEVELS = (1e-15, 1e-9, 1e-4, 0.02, 0.2, 0.5, 0.8, 0.98, 1 - 1e-4, 1 - 1e-9, 1 - 1e-15)


def max_quantile(dist: Delay, u: np.ndarray | float, n: float) -> np.ndarray:
    """Quantile of the maximum of n draws at CDF level u (0 < u < 1), for any n >= 1."""
    u = np.asarray(u, dtype=float)
    with np.errstate(divide="ignore"):
        lu = np.log(u) / float(n)  # log of F(M): tiny and negative for large n
    s = -np.expm1(lu)  # S(M), exact to full relative precision
    f = np.exp(lu)  # F(M), exact where it is small
    return dist.quantile_by_both(s, f)


def sample_max(dist: Delay, n: float, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
    """Draws of the maximum of n i.i.d. delays, by inversion of F^n on the survival side."""
    if n < 1:
        raise ValueError("n must be >= 1")
    u = rng.random(size)
    u = np.where(u == 0.0, np.nextafter(0.0, 1.0), u)  # log(0) would make the level 1
    return max_quantile(dist, u, n)


_GL_X, _GL_W = np.polynomial.legendre.leggauss(64)


def _breakpoints(dist: Delay, n: float) -> np.ndarray:
    pts = {float(x) for x in np.atleast_1d(max_quantile(dist, np.array(_LEVELS), n)) if np.isfinite(x)}
    pts.update(float(a) for a in dist.atoms)
    pts.add(0.0)
    if np.isfinite(dist.lower):
        pts.add(float(dist.lower))
    return np.array(sorted(pts))


def _nodes(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights over consecutive finite intervals."""
    a, b = edges[:-1], edges[1:]
    keep = b > a
    a, b = a[keep], b[keep]
    half = (b - a)[:, None] / 2
    x = (a[:, None] + b[:, None]) / 2 + half * _GL_X[None, :]
    return x.ravel(), (half * _GL_W[None, :]).ravel()


def _tail_nodes(b: float, width: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes for [b, inf): x = b + width * t / (1 - t), t in (0, 1)."""
    t = (_GL_X + 1) / 2
    x = b + width * t / (1 - t)
    w = _GL_W / 2 * width / (1 - t) ** 2
    return x, w


def max_moments(dist: Delay, n: float) -> tuple[float, float]:
    """(E[M], Var[M]) for the maximum M of n i.i.d. draws.

    Gauss-Legendre quadrature (64 nodes) on pieces cut at quantiles of M from
    1e-15 to 1 - 1e-15 and at the atoms of the distribution, so every piece is
    smooth; the part beyond the last cut is mapped onto a finite interval.
    Infinite when the tail is too heavy (Pareto alpha <= 1 for the mean)."""
    # The maximum has the tail index of one draw: its moments exist exactly when
    # the distribution's do, and quadrature of a divergent integral would not say so.
    if not np.isfinite(dist.mean()):
        return float("inf"), float("inf")
    infinite_var = not np.isfinite(dist.var())
    pts = _breakpoints(dist, n)
    lo = float(dist.lower)
    start = max(0.0, lo) if np.isfinite(lo) else 0.0
    pos = pts[pts >= start]
    xs, ws = _nodes(pos)
    top = float(pos[-1])
    width = max(top - float(pos[-2]) if len(pos) > 1 else abs(top), abs(top) * 1e-3, 1e-30)
    tx, tw = _tail_nodes(top, width)
    xs, ws = np.concatenate([xs, tx]), np.concatenate([ws, tw])
    with np.errstate(all="ignore"):
        p_gt = -np.expm1(n * dist.log_cdf_safe(xs))  # P(M > x)
    m1 = float(np.sum(ws * p_gt)) + start
    m2 = float(np.sum(ws * 2 * xs * p_gt)) + start * start
    if lo < 0:
        neg = pts[pts <= 0]
        bottom = float(neg[0])
        nx, nw = _nodes(neg)
        width = max(float(neg[1] - neg[0]) if len(neg) > 1 else abs(bottom), 1e-30)
        if not np.isfinite(lo) or lo < bottom:
            tx, tw = _tail_nodes(-bottom, width)  # mirror of [-inf, bottom]
            nx, nw = np.concatenate([nx, -tx]), np.concatenate([nw, tw])
        with np.errstate(all="ignore"):
            p_le = np.exp(n * dist.log_cdf_safe(nx))  # P(M <= x)
        m1 -= float(np.sum(nw * p_le))
        m2 += float(np.sum(nw * -2 * nx * p_le))
    special = getattr(dist, "expected_max", None)
    mean = float(special(n)) if special is not None else m1
    if infinite_var or not np.isfinite(mean) or not np.isfinite(m2):
        return (mean if np.isfinite(mean) else float("inf")), float("inf")
    return mean, max(m2 - m1 * m1, 0.0)


def expected_max(dist: Delay, n: float) -> float:
    """E[max of n i.i.d. draws]."""
    return max_moments(dist, n)[0]
