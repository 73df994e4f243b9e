"""Build summary.json (the stable interface documented in docs/run-format.md).

The TypedDicts below are summary.json's shape as Python sees it: `build.make_summary`
returns a `Summary`, and code that reads a measure run's summary annotates it so
(mypy then checks every key it reads).  runcheck.py validates the same fields when a
run is loaded.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import TypedDict

import numpy as np

from jitterscope.measure.attribution import Attribution
from jitterscope.measure.events import SourceEvents
from jitterscope.measure.periodicity import detect_period

TOP_FUNCTIONS = 8
TOP_CHAINS = 20


class RunHeader(TypedDict):
    id: str
    host: str
    kernel: str
    start: str
    duration_s: float
    threshold_ns: float
    tracing: bool
    cpus: list[int]


class CpuRow(TypedDict):
    noise_ns: int
    noise_ppm: float
    detours: int
    p99_ns: float
    max_ns: int
    resolution_ns: float


class SourceRow(TypedDict):
    kind: str  # irq, softirq, nmi, thread (tracing/records.KINDS)
    name: str
    count: int  # detours it took time in
    detours_per_s: float | None  # count per measured second of one CPU (measure/events.py)
    events: int | None  # its own entries in the measured window, detour or not; None: not counted
    events_per_s: float | None  # events per measured second of one CPU
    total_ns: int
    share: float  # of all noise
    mean_ns: float  # per detour it took time in
    p99_ns: float
    max_ns: int
    period_s: float | None  # measure/periodicity.py
    cpus: list[int]
    functions: list[str]  # work items and timer callbacks it ran, most time first


class QuietSource(TypedDict):
    """A source that ran on a probed CPU in the window but took no time in any detour."""

    kind: str
    name: str
    events: int
    events_per_s: float
    cpus: list[int]


class ChainRow(TypedDict):
    sources: list[str]  # "kind:name", in order of first appearance inside the detour
    count: int
    total_ns: int


class UnexplainedPart(TypedDict):
    count: int
    total_ns: int
    share: float
    likely: str


class Summary(TypedDict):
    """summary.json of a measure run."""

    run: RunHeader
    cpus: dict[str, CpuRow]  # keyed by CPU number as text (JSON keys)
    sources: list[SourceRow]
    quiet_sources: list[QuietSource]
    chains: list[ChainRow]
    unexplained: UnexplainedPart
    lost_events: int


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else 0.0


def cpu_table(
    det_cpu: np.ndarray,
    det_dur: np.ndarray,
    cpus: list[int],
    measured_ns: dict[int, float],
    resolution_ns: dict[int, float],
) -> dict[str, CpuRow]:
    out: dict[str, CpuRow] = {}
    for c in cpus:
        d = det_dur[det_cpu == c]
        noise = int(d.sum())
        span = measured_ns.get(c, 0.0)
        out[str(c)] = {
            "noise_ns": noise,
            "noise_ppm": round(noise / span * 1e6, 3) if span > 0 else 0.0,
            "detours": int(len(d)),
            "p99_ns": round(_pct(d, 99), 1),
            "max_ns": int(d.max()) if len(d) else 0,
            "resolution_ns": round(float(resolution_ns.get(c, 0.0)), 3),
        }
    return out


def _per_s(n: int, exposure_s: float) -> float | None:
    return round(n / exposure_s, 3) if exposure_s > 0 else None


def source_list(
    att: Attribution,
    det_cpu: np.ndarray,
    det_start: np.ndarray,
    total_noise: int,
    functions: dict[int, list[str]],
    events: SourceEvents | None = None,
    exposure_s: float = 0.0,
) -> list[SourceRow]:
    """One row per source that took time in a detour; `exposure_s` (measured s summed over CPUs) gives rates."""
    sources: list[SourceRow] = []
    for code in np.unique(att.source):
        if code == 0:
            continue
        sel = att.source == code
        ns = att.ns[sel]
        dets = att.detour[sel]
        cpus = sorted({int(c) for c in np.unique(det_cpu[dets])})
        # Period: from when the source started taking time, per CPU; the CPU
        # with most occurrences speaks for it.
        period = None
        best = 0
        when = det_start[dets] + att.offset_ns[sel]
        for c in cpus:
            t = when[det_cpu[dets] == c]
            if len(t) > best:
                p = detect_period(t)
                if p is not None:
                    period, best = p, len(t)
        kind, name = att.sources[int(code)]
        n_det = int(len(np.unique(dets)))
        n_ev = None if events is None else int(events.counts[int(code)])
        sources.append(
            {
                "kind": kind,
                "name": name,
                "count": n_det,
                "detours_per_s": _per_s(n_det, exposure_s),
                "events": n_ev,
                "events_per_s": None if n_ev is None else _per_s(n_ev, exposure_s),
                "total_ns": int(ns.sum()),
                "share": round(float(ns.sum()) / total_noise, 6) if total_noise else 0.0,
                "mean_ns": round(float(ns.mean()), 1),
                "p99_ns": round(_pct(ns, 99), 1),
                "max_ns": int(ns.max()),
                "period_s": None if period is None else round(period, 9),
                "cpus": cpus,
                "functions": functions.get(int(code), []),
            }
        )
    sources.sort(key=lambda s: -s["total_ns"])
    return sources


def quiet_sources(att: Attribution, events: SourceEvents | None) -> list[QuietSource]:
    """Sources with events in the window but no time in any detour, most events first."""
    if events is None:
        return []
    took_time = set(np.unique(att.source).tolist())
    out: list[QuietSource] = []
    for code in np.flatnonzero(events.counts):
        if int(code) in took_time:
            continue
        kind, name = att.sources[int(code)]
        n = int(events.counts[code])
        out.append(
            {
                "kind": kind,
                "name": name,
                "events": n,
                "events_per_s": _per_s(n, events.exposure_s) or 0.0,
                "cpus": events.cpus[int(code)],
            }
        )
    out.sort(key=lambda q: (-q["events"], q["kind"], q["name"]))
    return out


def chain_list(att: Attribution, det_dur: np.ndarray) -> list[ChainRow]:
    """Sources in succession inside one detour (De et al. 2007 concatenates them)."""
    labels = [f"{k}:{n}" for k, n in att.sources]
    chains: Counter[tuple[str, ...]] = Counter()
    totals: dict[tuple[str, ...], int] = defaultdict(int)
    # att is sorted by (detour, offset): walk runs of equal detour once.
    sel = att.source != 0
    d, s = att.detour[sel].tolist(), att.source[sel].tolist()
    i, n = 0, len(d)
    while i < n:
        j = i + 1
        while j < n and d[j] == d[i]:
            j += 1
        if j - i >= 2:
            key = tuple(labels[x] for x in s[i:j])
            chains[key] += 1
            totals[key] += int(det_dur[d[i]])
        i = j
    ranked = sorted(chains, key=lambda k: -totals[k])[:TOP_CHAINS]
    return [{"sources": list(k), "count": chains[k], "total_ns": totals[k]} for k in ranked]


def unexplained_part(att: Attribution, total_noise: int, likely: str) -> UnexplainedPart:
    sel = att.source == 0
    ns = int(att.ns[sel].sum())
    return {
        "count": int(len(np.unique(att.detour[sel]))),
        "total_ns": ns,
        "share": round(ns / total_noise, 6) if total_noise else 0.0,
        "likely": likely,
    }


LONG_GAP_NS = 500_000  # a guest-invisible gap this long is a descheduled vCPU, not a VM exit


def long_unexplained_share(att: Attribution) -> float:
    """Share of unexplained time in pieces of at least LONG_GAP_NS."""
    u = att.ns[att.source == 0]
    return float(u[u >= LONG_GAP_NS].sum() / u.sum()) if u.sum() else 0.0


def likely_unexplained(
    virtualization: str | None,
    tracing: bool,
    reason: str | None,
    steal_ns: float | None,
    unexplained_ns: float,
    long_share: float = 0.0,
) -> str:
    """Say what most likely took the time no traced kernel activity covers.

    In a guest, time the guest kernel cannot see is the hypervisor's: either
    the vCPU was descheduled by the host (long gaps; counted as steal time when
    the hypervisor reports it) or short VM exits (emulated timers, interrupts,
    MSR/IO accesses).  On bare metal it is firmware (SMIs) or hardware.  `steal_ns` None: not known (a
    killed run whose steal time was not recovered)."""
    if not tracing:
        return f"attribution off: {reason or 'tracing disabled'}"
    if virtualization:
        if steal_ns is None:  # a killed run's: the capture kept no figure for it (measure/recover.py)
            steal = "steal time during the run is not known"
        else:
            steal = f"steal time during the run was {steal_ns / 1e6:.3g} ms"
        if (steal_ns is not None and steal_ns > 0 and steal_ns >= 0.5 * unexplained_ns) or long_share >= 0.5:
            return (
                f"hypervisor ({virtualization}): the host descheduled this vCPU to run something "
                f"else ({long_share * 100:.0f}% of it in gaps over {LONG_GAP_NS / 1e6:g} ms; {steal})"
            )
        return (
            f"hypervisor ({virtualization}): VM exits such as emulated timers, interrupts or "
            f"MSR accesses, which the guest kernel cannot see; {steal}"
        )
    return "hardware or firmware: SMIs, SMT sibling contention, cache or TLB misses"
