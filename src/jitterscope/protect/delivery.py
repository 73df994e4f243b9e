"""Did the actuator deliver the law's share, and was the best-effort CPU the programs' own?

Under persistent excess the law leaves the best-effort programs Ts/(Ts+S) of the progress they make
unprotected (the progress ratio).  That holds only while they have their CPU to themselves: when other
work shares it, the time a suspension frees goes to that work, and when the programs run again the
scheduler's fairness hands them more than their usual share (they slept), so the ratio drifts above
the law (0.15-0.19 at 100/900 on a shared CPU).  So the summary says whether the CPU was theirs alone
and, with --compare, gives the ratio's confidence interval from the run's own blocks of samples.

The CPU counts as shared when, unprotected, the programs, the controller and its writer left more than
SHARED_ABOVE of it unused by them (other tasks ran, or the CPU idled although they were runnable).

What an actuator controls is the programs' CPU time; their progress follows it only while their progress per
CPU-second is the same suspended and not.  It need not be: on a KVM guest of a cloud Xeon, a cache-resident
stream made 5-8% more progress per CPU-second in 500 us slices between the rt blocker's spins than running
on (CPU-time ratio 0.512, progress ratio 0.545 at 500/500).  So the summary also gives the CPU-time ratio
(`cpu_ratio`, with its interval), and a progress ratio off the law while the CPU-time ratio is on it is
said to be the programs' doing, not the actuator's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitterscope.protect import records as rec
from jitterscope.protect.results import Delivery, Summary

SHARED_ABOVE = 0.05  # of the CPU, taken by other work while unprotected
BLOCK_NS = 20e6  # the ratio's interval is computed over blocks of about this length within each phase
TOLERANCE = 0.03  # of the progress ratio: the law is delivered within it (docs/commands/protect.md)
LEVEL = 0.99


def block_rates(s: Any, phase_ns: float, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Progress per second in each whole block (phases cut into blocks of about BLOCK_NS), protected and not.

    `s`: the samples (records or columns by name: t_ns, flags, `key`).  The first and last block of the
    run are dropped (a block half outside the run would read low)."""
    if not len(s["t_ns"]) or not phase_ns:
        return np.array([]), np.array([])
    per = max(1, round(phase_ns / BLOCK_NS))
    block_ns = phase_ns / per
    idx = (np.maximum(s["t_ns"], 0) // block_ns).astype(np.int64)
    vals = s[key].astype(np.float64)
    ok = vals >= 0
    on = (s["flags"] & rec.S_ON) != 0
    out: dict[bool, list[float]] = {True: [], False: []}
    first, last = idx.min(), idx.max()
    for b in np.unique(idx[ok]):
        if b in (first, last):
            continue
        sel = (idx == b) & ok
        out[bool(on[sel][0])].append(float(vals[sel].sum()) / (block_ns / 1e9))
    return np.array(out[True]), np.array(out[False])


def ratio_interval(p: np.ndarray, u: np.ndarray, level: float = LEVEL) -> tuple[float, float] | None:
    """Confidence interval of mean(p)/mean(u) (delta method, Student t on the smaller sample's degrees of
    freedom); None with fewer than 3 blocks on a side or no unprotected progress."""
    if len(p) < 3 or len(u) < 3 or u.mean() <= 0:
        return None
    from scipy import stats  # lazy: scipy.stats takes 1.2 s to import here, before protect starts the program

    r = p.mean() / u.mean()
    se = r * np.sqrt(p.var(ddof=1) / (len(p) * max(p.mean(), 1e-300) ** 2) + u.var(ddof=1) / (len(u) * u.mean() ** 2))
    t = float(stats.t.ppf(0.5 + level / 2, min(len(p), len(u)) - 1))
    return float(r - t * se), float(r + t * se)


def delivery(summary: Summary, s: np.ndarray, phase_ns: float | None) -> Delivery | None:
    """What the law promised, what the programs got, and why they may differ; None without --compare."""
    phases = summary["phases"]
    if "unprotected" not in phases:
        return None
    on, off = phases["protected"]["best_effort"], phases["unprotected"]["best_effort"]
    law = summary.get("expected_share")
    excess = on["samples"] > 0 and on["over"] == on["samples"]  # every protected sample over: the law's case
    ctl = sum((c.get("controller_cpu_share") or 0.0) for c in summary["cpus"].values()) / max(1, len(summary["cpus"]))
    used = (off["cpu_share"] or 0.0) + ctl + summary["controller"]["writer_cpu_share"]
    other = max(0.0, 1.0 - used) if off["cpu_share"] is not None else None
    shared = other is not None and other > SHARED_ABOVE
    key = "progress_bytes" if on["progress_bytes_per_s"] and off["progress_bytes_per_s"] else "cpu_ns"
    ci = ratio_interval(*block_rates(s, phase_ns or 0, key))
    cpu_ci = ratio_interval(*block_rates(s, phase_ns or 0, "cpu_ns"))
    cpu_ratio = on["cpu_share"] / off["cpu_share"] if on["cpu_share"] is not None and off["cpu_share"] else None
    ratio = summary.get("progress_ratio")
    x = [d["mean"] for c in summary["cpus"].values() if (d := c["suspension_ns"])]
    late = float(np.mean(x)) - summary["suspend_ns"] if x and summary["law"] == "fixed" else None
    within = None
    if law is not None and excess and ratio is not None and not shared:
        within = abs(ratio - law) <= TOLERANCE
    note = None
    if shared:
        note = (
            f"the best-effort CPU was shared: unprotected, other work took about {other:.0%} of it, so the "
            f"ratio {ratio:.3f} does not measure the law"
            + (f" ({law:.3f})" if law is not None else "")
            + ": the suspended time went to that work, and the programs, having slept, got more than their "
            f"usual share when resumed; protected they had {_pct(on['cpu_share'])} of the CPU, unprotected "
            f"{_pct(off['cpu_share'])}. Give them a CPU of their own to test the law"
        )
    elif within is False:
        assert law is not None and ratio is not None
        why = (
            f"suspensions lasted {late / 1e3:+.1f} us on average beyond the asked {summary['suspend_ns'] / 1e3:.0f} us"
            if late is not None
            else "see the suspension and sampling times below"
        )
        if key == "progress_bytes" and cpu_ratio is not None and abs(cpu_ratio - law) <= TOLERANCE:
            why = (
                f"the actuator gave them {cpu_ratio:.3f} of their unprotected CPU time, but their progress per "
                f"CPU-second was {ratio / cpu_ratio - 1:+.1%} when suspended (their caches, the CPU's frequency "
                f"or the host), which no actuator controls"
            )
        note = f"the programs got {ratio:.3f} of their unprotected progress, not the law's {law:.3f}: {why}"
    return {
        "law_share": law,
        "persistent_excess": excess,
        "other_share": other,
        "shared": shared,
        "ratio_ci": list(ci) if ci else None,
        "ratio_ci_level": LEVEL,
        "cpu_ratio": cpu_ratio,
        "cpu_ratio_ci": list(cpu_ci) if cpu_ci else None,
        "within_tolerance": within,
        "tolerance": TOLERANCE,
        "suspension_excess_ns": late,
        "note": note,
    }


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"
