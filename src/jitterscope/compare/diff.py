"""What changed between two samples: new, gone and changed sources, totals per CPU.

Regression rule (documented in docs/commands/compare.md) — something got
*significantly worse beyond the threshold* when all three hold:

1. significant: its Benjamini-Hochberg q-value is below `alpha` (default 0.01)
   for the rate test or the duration test (sources) or the block test (totals);
2. it adds at least `min_ppm` (default 20 ppm = 20 us per second per CPU) of
   noise, averaged over the compared CPUs (for a total: on that CPU);
3. its noise is at least `min_ratio` (default 1.5) times what it was (always
   true for a new source).
"""

from __future__ import annotations

import math

import numpy as np

from jitterscope.compare import stats as S
from jitterscope.compare.results import Diff, DurationTest, RateTest, Side, SourceRow, Total
from jitterscope.compare.sample import Key, Sample
from jitterscope.compare.thresholds import Thresholds


def _side(sample: Sample, key: Key) -> Side:
    v = sample.occurrences.get(key, np.zeros(0, np.int64))
    t_s = sample.exposure_ns / 1e9
    return {
        "count": len(v),
        "rate_hz": len(v) / t_s if t_s > 0 else 0.0,
        "total_ns": int(v.sum()),
        "ppm": float(v.sum()) / sample.exposure_ns * 1e6 if sample.exposure_ns else 0.0,
        "median_ns": float(np.median(v)) if len(v) else 0.0,
        "p99_ns": float(np.percentile(v, 99)) if len(v) else 0.0,
    }


def every_source(d: Diff) -> list[SourceRow]:
    """Every source row of a diff: new, gone, changed and unchanged."""
    return d["new"] + d["gone"] + d["changed"] + d["unchanged"]


def smallest_q(r: SourceRow) -> float:
    """The source's smallest q-value of its tests (rate, and duration when there is one)."""
    qs = [x["q"] for x in ([r["rate"]] + ([r["duration"]] if r["duration"] else [])) if x["q"] is not None]
    return min(qs, default=1.0)


def _finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def diff(
    base: Sample,
    new: Sample,
    th: Thresholds | None = None,
    untested_kinds: frozenset[str] = frozenset(),
    test_totals: bool = True,
) -> Diff:
    """Compare two samples of the same CPUs (see the module docstring).

    Sources of `untested_kinds`, and the totals unless `test_totals`, are shown but never
    significant nor a regression: the runs were measured so that they are not comparable
    (compare/comparable.py)."""
    th = th or Thresholds()
    keys = sorted(set(base.occurrences) | set(new.occurrences))
    # every p-value of what is tested, for one BH adjustment: an untested source's or total's p is shown, with
    # no q, and kept out of the family (it would raise every tested q and count as a test)
    tests: list[float] = []
    tested: list[RateTest | DurationTest | Total] = []  # what each p-value's q goes to
    rows: list[SourceRow] = []
    for key in keys:
        b, n = _side(base, key), _side(new, key)
        rate, phi = S.rate_test(
            b["count"], base.exposure_ns, n["count"], new.exposure_ns, base.block_counts(key), new.block_counts(key)
        )
        dur = S.duration_test(base.occurrences.get(key, np.zeros(0)), new.occurrences.get(key, np.zeros(0)))
        rate_t: RateTest = {
            "ratio": _finite(rate.ratio),
            "ci95": [_finite(rate.ci[0]), _finite(rate.ci[1])],
            "p": rate.p,
            "q": None,
            "dispersion": round(phi, 3),
        }
        row: SourceRow = {
            "kind": key[0],
            "name": key[1],
            "names": sorted(base.names.get(key, set()) | new.names.get(key, set())),
            "base": b,
            "new": n,
            "rate": rate_t,
            "duration": None,
            "delta_ppm": n["ppm"] - b["ppm"],
            "ppm_ratio": _finite(n["ppm"] / b["ppm"]) if b["ppm"] > 0 else None,
            "significant": False,
            "tested": True,
            "regression": False,
        }
        testing = key[0] not in untested_kinds
        if testing:
            tests.append(rate.p)
            tested.append(rate_t)
        if dur is not None:
            dur_t: DurationTest = {
                "median_ratio": _finite(dur.median_ratio),
                "cliffs_delta": dur.cliffs_delta,
                "p": dur.p,
                "q": None,
            }
            row["duration"] = dur_t
            if testing:
                tests.append(dur.p)
                tested.append(dur_t)
        rows.append(row)
    totals: dict[str, Total] = {}
    for c in sorted(set(base.cpus) & set(new.cpus)):
        bp, np_ = base.ppm(c), new.ppm(c)
        p = S.block_test(base.blocks_ppm[c], new.blocks_ppm[c])
        t: Total = {
            "base_ppm": bp,
            "new_ppm": np_,
            "delta_ppm": np_ - bp,
            "ratio": _finite(np_ / bp) if bp > 0 else None,
            "base_detours": base.detours.get(c, 0),
            "new_detours": new.detours.get(c, 0),
            "p": p,
            "q": None,
            "significant": False,
            "tested": test_totals,
            "regression": False,
        }
        totals[str(c)] = t
        if test_totals:
            tests.append(p)
            tested.append(t)
    for part, q in zip(tested, S.bh_adjust(tests)):
        part["q"] = q

    out_new, out_gone, out_changed, out_same = [], [], [], []
    for r in rows:
        q_min = smallest_q(r)
        r["significant"] = q_min < th.alpha and r["kind"] not in untested_kinds
        r["tested"] = r["kind"] not in untested_kinds
        ratio_ok = r["base"]["ppm"] == 0 or r["new"]["ppm"] >= th.min_ratio * r["base"]["ppm"]
        r["regression"] = bool(r["significant"] and r["delta_ppm"] >= th.min_ppm and ratio_ok)
        if r["base"]["count"] == 0:
            out_new.append(r)
        elif r["new"]["count"] == 0:
            out_gone.append(r)
        elif r["significant"]:
            r["direction"] = "worse" if r["delta_ppm"] > 0 else "better"
            out_changed.append(r)
        else:
            out_same.append(r)
    for t in totals.values():
        t["significant"] = t["q"] is not None and t["q"] < th.alpha and test_totals
        ratio_ok = t["base_ppm"] == 0 or t["new_ppm"] >= th.min_ratio * t["base_ppm"]
        t["regression"] = bool(t["significant"] and t["delta_ppm"] >= th.min_ppm and ratio_ok)

    def order(r: SourceRow) -> float:
        return -abs(r["delta_ppm"])

    regressions = [
        f"{r['kind']}:{r['name']} ({'new' if r['base']['count'] == 0 else 'worse'}, {r['delta_ppm']:+,.0f} ppm)"
        for r in sorted(rows, key=order)
        if r["regression"]
    ]
    regressions += [f"CPU {c} total noise ({t['delta_ppm']:+,.0f} ppm)" for c, t in totals.items() if t["regression"]]
    return {
        "new": sorted(out_new, key=order),
        "gone": sorted(out_gone, key=order),
        "changed": sorted(out_changed, key=order),
        "unchanged": sorted(out_same, key=order),
        "total": totals,
        "tests": len(tests),
        "regression": bool(regressions),
        "regressions": regressions,
        "thresholds": {"alpha": th.alpha, "min_ppm": th.min_ppm, "min_ratio": th.min_ratio},
    }
