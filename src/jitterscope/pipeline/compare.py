"""`jitterscope compare` of two pipeline runs: did the latency distribution move or spread?

* Location: the Mann-Whitney U test on the per-iteration latencies (Mann &
  Whitney 1947), effect size Cliff's delta = 2U/(n1 n2) - 1 (Cliff 1993), as
  compare does for detour durations (compare/stats.py).
* Spread (jitter, the thesis's sigma): the Brown-Forsythe test, Levene's test
  centred on the median (Brown & Forsythe 1974, JASA 69(346)), robust to the
  heavy right tail of latencies.
* The two p-values are adjusted together with Benjamini-Hochberg.

Consecutive iterations are not independent (a noisy second slows several), so
the p-values are optimistic for long bursts; the ratios are what to read first.
A regression (exit 1 with --fail-on-regression): the mean or sigma got worse
with q < alpha and by at least --min-ratio.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np
from scipy import stats

from jitterscope.pipeline.results import Latency
from jitterscope.pipeline.stats import KEYS, fmt_us, latency_stats
from jitterscope.rundir import Run


class RunInfo(TypedDict):
    path: str
    graph: str
    heuristic: str
    memory: str
    threads: int
    iterations: int
    host: str | None
    digest: str | None


class _TestBase(TypedDict):
    test: str
    p: float
    q: float


class Test(_TestBase, total=False):
    cliffs_delta: float


class Comparison(TypedDict):
    """`compare --json` of two pipeline runs."""

    kind: str
    runs: dict[str, RunInfo]  # base, new
    latency: dict[str, Latency]  # base, new
    ratio: dict[str, float | None]  # NEW/BASE per statistic
    tests: dict[str, Test]  # location, spread (both runs with at least 3 iterations)
    alpha: float
    min_ratio: float
    notes: list[str]
    same_outputs: bool
    regression: bool
    worse: list[str]


def _values(s: Latency) -> dict[str, float | None]:
    """The statistics by name (stats.KEYS)."""
    return {
        "mean": s["mean"],
        "sd": s["sd"],
        "min": s["min"],
        "p50": s["p50"],
        "p99": s["p99"],
        "p999": s["p999"],
        "max": s["max"],
    }


def _info(run: Run) -> RunInfo:
    r = run.summary["run"]
    return {
        "path": str(run.path),
        "graph": r["graph"],
        "heuristic": r["heuristic"],
        "memory": r["memory"],
        "threads": r["threads"],
        "iterations": r["iterations"],
        "host": run.meta.get("host"),
        "digest": run.summary.get("outputs", {}).get("digest"),
    }


def compare_pipelines(base: Run, new: Run, th: Any = None) -> Comparison:
    alpha = getattr(th, "alpha", 0.01)
    min_ratio = getattr(th, "min_ratio", 1.5)
    a, b = (r.table("iterations").column("latency_ns").to_numpy().astype(np.float64) for r in (base, new))
    sa, sb = latency_stats(a), latency_stats(b)
    notes = []
    if base.meta.get("graph", {}).get("digest") != new.meta.get("graph", {}).get("digest"):
        notes.append("different graphs: the latencies are of different work")
    if base.meta.get("host") != new.meta.get("host"):
        notes.append(f"different hosts: {base.meta.get('host')} vs {new.meta.get('host')}")
    tests: dict[str, Test] = {}
    if len(a) >= 3 and len(b) >= 3:
        u = stats.mannwhitneyu(b, a, alternative="two-sided")
        bf = stats.levene(b, a, center="median")
        q = stats.false_discovery_control([float(u.pvalue), float(bf.pvalue)])
        tests = {
            "location": {
                "test": "mann-whitney",
                "p": float(u.pvalue),
                "q": float(q[0]),
                "cliffs_delta": float(2 * u.statistic / (len(a) * len(b)) - 1),
            },
            "spread": {"test": "brown-forsythe", "p": float(bf.pvalue), "q": float(q[1])},
        }
    va, vb = _values(sa), _values(sb)
    ratio: dict[str, float | None] = {}
    for k in KEYS:
        x, y = va[k], vb[k]
        if x is not None and y is not None:
            ratio[k] = y / x if x else None
    worse = []
    if tests:
        if tests["location"]["q"] < alpha and (ratio.get("mean") or 0) >= min_ratio:
            worse.append("mean")
        if tests["spread"]["q"] < alpha and (ratio.get("sd") or 0) >= min_ratio:
            worse.append("sd")
    return {
        "kind": "pipeline",
        "runs": {"base": _info(base), "new": _info(new)},
        "latency": {"base": sa, "new": sb},
        "ratio": ratio,
        "tests": tests,
        "alpha": alpha,
        "min_ratio": min_ratio,
        "notes": notes,
        "same_outputs": _info(base)["digest"] == _info(new)["digest"],
        "regression": bool(worse),
        "worse": worse,
    }


def render_compare(res: Comparison) -> str:
    b, n = res["runs"]["base"], res["runs"]["new"]
    lines = [
        f"BASE {b['path']}: {b['heuristic']} + {b['memory']} on {b['threads']} threads",
        f"NEW  {n['path']}: {n['heuristic']} + {n['memory']} on {n['threads']} threads",
        f"{'latency (us)':14} {'BASE':>10} {'NEW':>10} {'NEW/BASE':>9}",
    ]
    for k in KEYS:
        r = res["ratio"].get(k)
        lines.append(
            f"{k:14} {fmt_us(_values(res['latency']['base'])[k]):>10} {fmt_us(_values(res['latency']['new'])[k]):>10} "
            f"{'-' if r is None else f'{r:.3f}':>9}"
        )
    t = res["tests"]
    if t:
        lines.append(
            f"location: Mann-Whitney q={t['location']['q']:.3g}, Cliff's delta "
            f"{t['location']['cliffs_delta']:+.2f}; spread: Brown-Forsythe q={t['spread']['q']:.3g}"
        )
    lines.append("outputs: identical" if res["same_outputs"] else "outputs: differ (other graph, seed or input)")
    lines += [f"note: {x}" for x in res["notes"]]
    if res["regression"]:
        lines.append(
            f"REGRESSION: {' and '.join(res['worse'])} worse (q < {res['alpha']:g}, ratio >= {res['min_ratio']:g})"
        )
    return "\n".join(lines)
