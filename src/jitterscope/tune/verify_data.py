"""What `tune verify` concludes from two runs: per targeted source, and overall per CPU.

Sources are compared at the grain the knobs act on (sources.refine), with
compare's own tests (compare_loaded: the exact Poisson rate test or its
quasi-Poisson form under overdispersion, Mann-Whitney on durations, Mann-Whitney
on 100 ms blocks for totals, Benjamini-Hochberg).  The targeted sources are a
family named in advance by the plan, so their tests form their own BH family
(`only=`); every other source is compared in the full comparison, where a new
or worse one is a side effect worth showing.

A target *went down* when its change is significant (q < alpha) and its noise
is lower.  It did *as planned* when, for `expect: gone`, it is absent from the
measured CPUs afterwards, and for `expect: fewer` with a factor f, the 95%
interval of its rate ratio reaches f or below.  A target too rare in the
baseline for any drop to be significant (even with none left afterwards, the
exact test's smallest p-value is not below alpha) is *too rare to test*: it is
shown, kept out of the family, and neither passes nor fails.  Verified = at
least one target was testable and every testable one went down.

The overall noise of each CPU is shown with a 95% bootstrap interval of its
mean over the run's blocks (Efron & Tibshirani 1993, "An Introduction to the
Bootstrap"; scipy.stats.bootstrap, BCa), clipped to what a CPU can lose.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np
from scipy import stats

from jitterscope.compare import Thresholds, compare_loaded, from_run, source_key
from jitterscope.compare.diff import every_source, smallest_q
from jitterscope.compare.results import SourceRow, Total
from jitterscope.rundir import Run
from jitterscope.tune.records import PlanBoot
from jitterscope.tune.sources import refine


class Target(TypedDict):
    """A source the plan targets: what it expects of it (gone, or fewer by `factor`) and the knobs that should."""

    source: str
    expect: str
    factor: float | None
    knobs: list[str]


class Side(TypedDict):
    count: int
    ppm: float
    p99_ns: float
    median_ns: float


class Verdict(TypedDict):
    before: Side
    after: Side
    q: float | None
    rate_ratio: float | None
    ci95: list[float | None]
    down: bool
    as_planned: bool
    testable: bool
    verdict: str
    short: str


class TargetResult(Target, Verdict):
    predicted_ppm: float | None


class CpuOverall(Total):
    base_ci95: list[float | None]
    new_ci95: list[float | None]


class Applied(TypedDict):
    knob: str
    before: str | None
    value: str
    changed: bool
    now: str | None


class Reverted(TypedDict):
    knob: str
    original: str | None
    now: str | None
    back: bool


class _AnalysisBase(TypedDict):
    alpha: float
    targets: list[TargetResult]
    overall: dict[int, CpuOverall]
    side_effects: list[str]
    ok: bool
    untestable: int
    notes: list[str]
    not_compared: list[str]
    tests: int


class Analysis(_AnalysisBase, total=False):
    """`analyse`'s result; `tune verify` adds what it did and where (summary.json of its directory)."""

    reverted: list[Reverted]
    before: str
    after: str
    out: str
    applied: list[Applied]
    skipped: list[str]
    record: str | None
    boot: PlanBoot
    unaddressed: list[dict[str, object]]  # as plan.yaml holds them (free-form, see tune/planfile.py)


def targets_of(changes: list[Any]) -> dict[tuple[str, str], Target]:
    """Source key -> what the plan expects of it and which knobs should do it."""
    out: dict[tuple[str, str], Target] = {}
    for c in changes:
        for s in c.sources:
            kind, _, name = s["source"].partition(":")
            t = out.setdefault(
                source_key(kind, name),
                {"source": s["source"], "expect": s["expect"], "factor": s.get("factor"), "knobs": []},
            )
            t["knobs"].append(f"{c.name}={c.value}")
            if s["expect"] == "gone":
                t["expect"], t["factor"] = "gone", 0.0
    return out


def _ci(blocks: np.ndarray) -> list[float | None]:
    if len(blocks) < 3 or np.all(blocks == blocks[0]):
        m = float(blocks.mean()) if len(blocks) else 0.0
        return [m, m]
    res = stats.bootstrap(
        (blocks,), np.mean, confidence_level=0.95, n_resamples=2000, method="BCa", random_state=np.random.default_rng(1)
    )
    lo, hi = res.confidence_interval
    # A block can exceed 1e6 ppm (a detour is counted in the block it starts in); the mean cannot.
    return [float(max(lo, 0.0)) if np.isfinite(lo) else None, float(min(hi, 1e6)) if np.isfinite(hi) else None]


def _side(row: SourceRow | None, which: str) -> Side:
    if row is None:
        return {"count": 0, "ppm": 0.0, "p99_ns": 0.0, "median_ns": 0.0}
    s = row["base"] if which == "base" else row["new"]
    return {"count": s["count"], "ppm": s["ppm"], "p99_ns": s["p99_ns"], "median_ns": s["median_ns"]}


def can_test(k_before: int, t_before: float, t_after: float, alpha: float) -> bool:
    """Whether the rate test could call a drop significant at all: even with no occurrence after,
    k_before occurrences give p = P(Binomial(k_before, t_after / (t_before + t_after)) = 0) * 2."""
    if k_before == 0 or t_before <= 0 or t_after <= 0:
        return False
    return float(stats.binomtest(0, k_before, t_after / (t_before + t_after)).pvalue) < alpha


def _verdict(t: Target, row: SourceRow | None, alpha: float, exposure: tuple[float, float]) -> Verdict:
    b, n = _side(row, "base"), _side(row, "new")
    empty: Verdict = {
        "before": b,
        "after": n,
        "q": None,
        "rate_ratio": None,
        "ci95": [None, None],
        "down": False,
        "as_planned": False,
        "testable": False,
        "verdict": "absent before: nothing to verify",
        "short": "absent before",
    }
    if row is None or b["count"] == 0:
        return empty
    if not can_test(b["count"], *exposure, alpha):
        empty.update(
            {
                "q": row["rate"]["q"],
                "as_planned": t["expect"] == "gone" and n["count"] == 0,
                "verdict": f"too rare to test ({b['count']} before, {n['count']} after): no drop of so few "
                f"occurrences can be significant at {alpha:g}; measure longer",
                "short": "too rare to test",
            }
        )
        return empty
    q = smallest_q(row)
    down = q < alpha and n["ppm"] < b["ppm"]
    ratio, ci = row["rate"]["ratio"], row["rate"]["ci95"]
    if t["expect"] == "gone":
        planned = n["count"] == 0
    elif t["factor"] is not None:
        planned = down and ci[0] is not None and ci[0] <= t["factor"]
    else:
        planned = down
    if not down:
        text = (
            f"did not go down: it rose ({b['ppm']:,.1f} -> {n['ppm']:,.1f} ppm, q={q:.2g})"
            if n["ppm"] >= b["ppm"]
            else f"did not go down significantly (q={q:.2g})"
        )
    elif planned:
        text = (
            "gone from the measured CPUs, as planned"
            if t["expect"] == "gone"
            else "went down as planned" + (" (none left in this run)" if n["count"] == 0 else "")
        )
    else:
        text = "went down, less than planned" + (" (still there)" if t["expect"] == "gone" else "")
    short = (
        "not down"
        if not down
        else "gone, as planned"
        if planned and n["count"] == 0
        else "down, as planned"
        if planned
        else "down, less than planned"
    )
    return {
        "before": b,
        "after": n,
        "q": q,
        "rate_ratio": ratio,
        "ci95": ci,
        "down": down,
        "as_planned": planned,
        "testable": True,
        "verdict": text,
        "short": short,
    }


def analyse(before: Run, after: Run, changes: list[Any], alpha: float) -> Analysis:
    rb, ra = refine(before), refine(after)
    th = Thresholds(alpha=alpha)
    targets = targets_of(changes)
    full = compare_loaded(rb, ra, th)
    exposure = (float(before.duration_ns), float(after.duration_ns))
    every = {(r["kind"], r["name"]): r for r in every_source(full)}
    family = {k for k in targets if k in every and can_test(every[k]["base"]["count"], *exposure, alpha)}
    fam = compare_loaded(rb, ra, th, only=family) if family else None
    rows = {**every, **{(r["kind"], r["name"]): r for r in (every_source(fam) if fam else [])}}
    results: list[TargetResult] = []
    for key, t in targets.items():
        row = rows.get(key)
        factor = t["factor"]
        predicted = row["base"]["ppm"] * factor if row is not None and factor is not None else None
        results.append({**t, **_verdict(t, row, alpha, exposure), "predicted_ppm": predicted})
    results.sort(key=lambda r: -r["before"]["ppm"])
    cpus = full["compared_cpus"]
    sb, sa = from_run(before, cpus), from_run(after, cpus)
    overall: dict[int, CpuOverall] = {
        c: {**full["total"][str(c)], "base_ci95": _ci(sb.blocks_ppm[c]), "new_ci95": _ci(sa.blocks_ppm[c])}
        for c in cpus
    }
    side_effects = [
        f"{r['kind']}:{r['name']} ({'new' if r['base']['count'] == 0 else 'worse'}, "
        f"{r['delta_ppm']:+,.1f} ppm, q={r['rate']['q'] or 0:.2g})"
        for r in full["new"] + full["changed"]
        if (r["kind"], r["name"]) not in targets and r["significant"] and r["delta_ppm"] > 0
    ]
    return {
        "alpha": alpha,
        "targets": results,
        "overall": overall,
        "side_effects": side_effects,
        "ok": any(r["testable"] for r in results) and all(r["down"] for r in results if r["testable"]),
        "untestable": sum(not r["testable"] for r in results),
        "notes": full["notes"],
        "not_compared": full["not_compared"],
        "tests": fam["tests"] if fam else 0,
    }
