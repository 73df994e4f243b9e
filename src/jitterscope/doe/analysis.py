"""Analysis of a finished two-level experiment, as plain data (rendering is elsewhere).

Parametric part — Jain, *The Art of Computer Systems Performance Analysis*
(1991): effects from the sign table (ch. 17.3: q_j = (1/n) sum_i s_ij ybar_i),
allocation of variation (ch. 17.4 and 18.4: SS_j = n r q_j^2,
SST = sum (y - ybar..)^2, SSE = sum (y - ybar_i.)^2, SST = sum SS_j + SSE),
standard deviation of effects and confidence intervals with the t distribution
on n(r-1) degrees of freedom (ch. 18.5), and the multiplicative model obtained
by analysing log10 y (ch. 18.7).

Nonparametric part, used by Vicente & Matias because run times are not i.i.d. normal:
the Kruskal-Wallis H test across treatments (Kruskal & Wallis 1952; scipy), and
Dunn's (1964) pairwise rank test with Holm's (1979) step-down correction
(scikit-posthocs).  Outliers are flagged with Tukey's fences (1.5 IQR beyond
the quartiles, Tukey 1977) per treatment and reported; they are never replaced
or dropped, unlike the averaging replacement of Vicente & Matias, because a noise
experiment's outliers are often the very thing being studied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from jitterscope.doe.design import Design
from jitterscope.doe.results import Allocation, Analysis, Effect, GroupShare, KruskalWallis, Treatment
from jitterscope.errors import JitterscopeError


def allocation(design: Design, y: np.ndarray, confidence: float = 0.95, log: bool = False) -> Allocation:
    """Effects, allocation of variation and CIs for an n x r response matrix in Yates order."""
    y = np.asarray(y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    n, r = y.shape
    if n != design.n:
        raise JitterscopeError(f"response has {n} treatments, the design {design.n}")
    if log:
        if np.any(y <= 0):
            raise JitterscopeError("the multiplicative (log) model needs every response > 0")
        y = np.log10(y)
    signs = design.sign_table()
    ybar = y.mean(axis=1)
    q = signs.T @ ybar / n  # q[0] is the grand mean
    ss = n * r * q[1:] ** 2
    sst = float(((y - y.mean()) ** 2).sum())
    sse = float(((y - ybar[:, None]) ** 2).sum())
    dof_e = n * (r - 1)
    have_error = r > 1
    if have_error:
        se = math.sqrt(sse / dof_e)
        s_q = se / math.sqrt(n * r)
        tcrit = float(stats.t.ppf(1 - (1 - confidence) / 2, dof_e))
    else:
        se = s_q = tcrit = float("nan")
    effects: list[Effect] = []
    names = ["I", *design.effects()]
    for j, name in enumerate(names):
        e: Effect = {
            "effect": name,
            "label": "mean" if j == 0 else (design.alias_name(name) if design.p else name),
            "q": float(q[j]),
            "ss": None if j == 0 else float(ss[j - 1]),
            "percent": None if j == 0 else (float(100 * ss[j - 1] / sst) if sst > 0 else 0.0),
        }
        if log:
            # y = 10^q0 * 10^(qA xA) * ...: the mean is a geometric mean, and moving a factor
            # from low (x=-1) to high (x=+1) multiplies y by 10^(2 q).
            e["ratio"] = float(10 ** q[j]) if j == 0 else float(10 ** (2 * q[j]))
        if have_error:
            half = tcrit * s_q
            e["ci"] = [float(q[j] - half), float(q[j] + half)]
            e["significant"] = bool(s_q > 0 and abs(q[j]) > half) or bool(s_q == 0 and q[j] != 0)
            tval = q[j] / s_q if s_q > 0 else math.inf
            e["p"] = float(2 * stats.t.sf(abs(tval), dof_e)) if s_q > 0 else (0.0 if q[j] else 1.0)
        effects.append(e)
    return {
        "model": "multiplicative (log10 y)" if log else "additive",
        "treatments": n,
        "replications": r,
        "confidence": confidence,
        "q0": float(q[0]),
        "effects": effects[1:],
        "mean": effects[0],
        "sst": sst,
        "sse": sse if have_error else None,
        # a response that never varied leaves nothing to allocate, and so nothing unexplained
        "error_percent": (float(100 * sse / sst) if sst > 0 else 0.0) if have_error else None,
        "constant": sst == 0,
        "dof_error": dof_e if have_error else None,
        "s_e": se if have_error else None,
        "s_q": s_q if have_error else None,
        "t": tcrit if have_error else None,
    }


def kruskal(groups: list[np.ndarray]) -> KruskalWallis:
    """Kruskal-Wallis H test that all groups come from the same distribution."""
    groups = [np.asarray(g, dtype=float) for g in groups]
    allv = np.concatenate(groups)
    if len(groups) < 2 or np.all(allv == allv[0]):
        return {"h": 0.0, "df": len(groups) - 1, "p": 1.0, "note": "all responses equal"}
    h, p = stats.kruskal(*groups)
    return {"h": float(h), "df": len(groups) - 1, "p": float(p)}


def dunn_holm(groups: list[np.ndarray]) -> np.ndarray:
    """Matrix of Holm-adjusted p-values of Dunn's pairwise test (1 on the diagonal)."""
    from jitterscope import nopandas

    with nopandas.allowed():
        import scikit_posthocs as sp  # lazy: it brings pandas (~1.8 s), and only the Dunn test needs it

    k = len(groups)
    allv = np.concatenate([np.asarray(g, dtype=float) for g in groups])
    if np.all(allv == allv[0]):
        return np.ones((k, k))
    m = sp.posthoc_dunn([list(map(float, g)) for g in groups], p_adjust="holm").to_numpy()
    return np.nan_to_num(m, nan=1.0)


def group_share(levels: np.ndarray, pvals: np.ndarray, by: list[int], alpha: float) -> GroupShare:
    """Vicente & Matias's table: the share of significant pairwise comparisons between groups.

    Treatments are grouped by the levels of the factors `by` (column indices);
    cell (G, H) is the fraction of pairs (t in G, u in H, t != u) whose Dunn-Holm
    p-value is below alpha.  The diagonal is the share within a group.
    """
    # First factor varies fastest, as in Yates order (Vicente & Matias's G1..G4).
    keys = sorted({tuple(int(levels[i, j]) for j in by) for i in range(len(levels))}, key=lambda t: t[::-1])
    members = {kk: [i for i in range(len(levels)) if tuple(int(levels[i, j]) for j in by) == kk] for kk in keys}
    share = np.full((len(keys), len(keys)), np.nan)
    pairs = np.zeros((len(keys), len(keys)), dtype=int)
    for a, ka in enumerate(keys):
        for b, kb in enumerate(keys):
            if b < a:
                continue
            ps = [pvals[i, j] for i in members[ka] for j in members[kb] if (i < j if a == b else True)]
            pairs[a, b] = len(ps)
            if ps:
                share[a, b] = float(np.mean(np.asarray(ps) < alpha))
    return {
        "groups": [list(kk) for kk in keys],
        "members": [members[kk] for kk in keys],
        "share": share.tolist(),
        "pairs": pairs.tolist(),
    }


def outliers(values: np.ndarray) -> list[int]:
    """Indices of values beyond Tukey's fences (1.5 IQR outside the quartiles)."""
    v = np.asarray(values, dtype=float)
    if len(v) < 4:
        return []  # quartiles of three points do not define fences worth trusting
    q1, q3 = np.percentile(v, [25, 75])
    lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    return [i for i, x in enumerate(v) if x < lo or x > hi]


@dataclass
class Data:
    """An experiment's responses: design, factor names, y[n][r], run ids per cell."""

    design: Design
    factor_names: list[str]
    y: np.ndarray
    run_ids: list[list[int]]
    unit: str


def main_effect_of(design: Design, effect: str) -> str | None:
    """The factor whose main effect a sign-table column carries, or None: the column itself
    (a base letter) or, in a fractional design, one of its aliases (column ABC carries D
    when D = ABC).  With two (resolution II) the first in plan order."""
    words = [effect] + [a.lstrip("-") for a in design.aliases(effect)] if design.p else [effect]
    mains = sorted(w for w in words if len(w) == 1)
    return mains[0] if mains else None


def default_grouping(design: Design, effects: list[Effect]) -> list[int]:
    """The two factors whose main-effect columns explain the most variation (Vicente & Matias groups by
    E and F), as factor indices.  In a fractional design a generated factor's main effect sits
    in an aliased column (D = ABC: column ABC), so aliases are read, not only one-letter names."""
    ranked = sorted(
        ((e["percent"] or 0.0, f) for e in effects if (f := main_effect_of(design, e["effect"]))), key=lambda x: -x[0]
    )
    return sorted(design.letters.index(f) for _, f in ranked[:2])


def analyze(data: Data, confidence: float = 0.95, log: bool = False, groups_by: list[int] | None = None) -> Analysis:
    """Everything `doe analyze` reports, as plain data."""
    d, y = data.design, data.y
    alpha = 1 - confidence
    labels = d.labels()
    lv = d.levels()
    alloc = allocation(d, y, confidence, log=False)
    treatments: list[Treatment] = []
    for i in range(d.n):
        vals = y[i]
        idx = outliers(vals)
        treatments.append(
            {
                "label": labels[i],
                "levels": {d.letters[j]: int(lv[i, j]) for j in range(d.k)},
                "values": [float(v) for v in vals],
                "runs": data.run_ids[i],
                "mean": float(np.mean(vals)),
                "median": float(np.median(vals)),
                "sd": float(np.std(vals, ddof=1)) if len(vals) > 1 else None,
                "outliers": [{"run": data.run_ids[i][k], "value": float(vals[k])} for k in idx],
            }
        )
    groups = [y[i] for i in range(d.n)]
    kw = kruskal(groups)
    kw["significant"] = kw["p"] < alpha
    out: Analysis = {
        "design": d.describe(),
        "factors": [{"letter": d.letters[i], "name": data.factor_names[i]} for i in range(d.k)],
        "unit": data.unit,
        "treatments": treatments,
        "allocation": alloc,
        "kruskal_wallis": kw,
        "dunn_holm": None,
        "group_comparisons": None,
    }
    if log:
        out["allocation_log"] = allocation(d, y, confidence, log=True)
    if y.shape[1] > 1:
        pv = dunn_holm(groups)
        out["dunn_holm"] = {
            "labels": labels,
            "p": pv.tolist(),
            "alpha": alpha,
            "significant_pairs": int(np.sum(np.triu(pv < alpha, 1))),
        }
        if groups_by is None:
            groups_by = default_grouping(d, alloc["effects"])
        gs = group_share(lv, pv, groups_by, alpha)
        gs["by"] = [d.letters[j] for j in groups_by]
        gs["names"] = [f"G{i + 1}" for i in range(len(gs["groups"]))]
        out["group_comparisons"] = gs
    return out
