"""Everything the report shows, as plain data (dicts, lists, numbers).

Rendering (figures.py, run.py with templates/run.html.j2) only draws what this module computed, so the
unit tests check the numbers here and the browser test checks the drawing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitterscope.humanize import count, percent, ppm
from jitterscope.humanize import duration_ns as format_ns
from jitterscope.measure.summary import ChainRow, SourceRow
from jitterscope.report.results import (
    Chain,
    CpuHistogram,
    CpuRow,
    Header,
    Histogram,
    ReportData,
    SourceDistribution,
    Timeline,
    TopSource,
    Unexplained,
)
from jitterscope.rundir import Run

TOP_SOURCES = 20  # rows in the sources table
MAJOR_SOURCES = 6  # sources that get their own duration distribution
TOP_CHAINS = 10
TIMELINE_BINS = 120  # noise-over-time resolution (bins per CPU)
KINDS = ("irq", "softirq", "nmi", "thread", "unexplained")


def log_bins(lo: float, hi: float, per_decade: int = 12) -> np.ndarray:
    """Log-spaced histogram edges covering [lo, hi] (De et al. 2007 plots on log scales)."""
    lo = max(1.0, float(lo))
    hi = max(hi, lo * 1.01)
    a, b = np.floor(np.log10(lo) * per_decade), np.ceil(np.log10(hi) * per_decade)
    return 10 ** (np.arange(a, b + 1) / per_decade)


def histogram(values: np.ndarray, edges: np.ndarray) -> Histogram:
    counts, _ = np.histogram(values, bins=edges)
    return {"edges_ns": [float(e) for e in edges], "counts": [int(c) for c in counts]}


def _spread(start: np.ndarray, ns: np.ndarray, bin_ns: int, nb: int) -> np.ndarray:
    """Sum intervals [start, start+ns) into bins of bin_ns, splitting those that cross bins."""
    b0 = np.clip(start // bin_ns, 0, nb - 1)
    b1 = np.clip((start + ns - 1) // bin_ns, 0, nb - 1)
    one = b0 == b1
    acc = np.bincount(b0[one], weights=ns[one], minlength=nb).astype(float)
    for s0, n in zip(start[~one].tolist(), ns[~one].tolist()):
        t, end = s0, s0 + n
        while t < end:
            b = min(int(t // bin_ns), nb - 1)
            edge = end if b == nb - 1 else min(end, (b + 1) * bin_ns)
            acc[b] += edge - t
            t = edge
    return acc


def header(run: Run) -> Header:
    m, s = run.meta, run.summary
    tr = m.get("tracing") or {}
    lost = int(s.get("lost_events", m.get("lost_events", 0)) or 0)
    warnings = []
    if not tr.get("enabled"):
        warnings.append(
            f"Attribution is off: {tr.get('reason') or 'tracing disabled'}. All noise is shown as unexplained."
        )
    if lost:
        warnings.append(
            f"{lost} kernel trace events were lost (ring buffer overrun): "
            "attribution is incomplete; rerun with a larger --buffer."
        )
    if m.get("interrupted"):
        warnings.append("The measurement was interrupted and is shorter than asked.")
    return {
        "id": m.get("id"),
        "host": m.get("host"),
        "kernel": m.get("kernel"),
        "command_line": " ".join(m.get("command_line") or []),
        "start": m.get("start"),
        "duration_s": float(m.get("duration_s", 0.0)),
        "cpus": run.cpus,
        "threshold_ns": (m.get("options") or {}).get("threshold_ns"),
        "cpu_model": m.get("cpu_model"),
        "clocksource": m.get("clocksource"),
        "virtualization": m.get("virtualization"),
        "tool_version": m.get("tool_version"),
        "tracing": {
            "enabled": bool(tr.get("enabled")),
            "reason": tr.get("reason"),
            "events": tr.get("events"),
            "clock": tr.get("clock"),
        },
        "lost_events": lost,
        "lost_by_cpu": tr.get("lost_by_cpu") or {},
        "interrupted": bool(m.get("interrupted")),
        "warnings": warnings,
    }


def source_label(kind: str, name: str) -> str:
    return name if kind == "unexplained" else f"{kind}:{name}"


@dataclass
class _Tables:
    """The detour and attribution columns the report reads, as numpy arrays."""

    d_cpu: np.ndarray
    d_start: np.ndarray
    d_dur: np.ndarray
    a_det: np.ndarray
    a_kind: np.ndarray
    a_name: np.ndarray
    a_ns: np.ndarray
    a_off: np.ndarray

    @classmethod
    def of(cls, run: Run) -> _Tables:
        att = run.attribution
        return cls(
            *run.detour_arrays(),
            att.column("detour").to_numpy(),
            np.asarray(att.column("kind").to_pylist(), dtype=object),
            np.asarray(att.column("name").to_pylist(), dtype=object),
            att.column("ns").to_numpy(),
            att.column("offset_ns").to_numpy(),
        )

    @property
    def a_cpu(self) -> np.ndarray:
        return self.d_cpu[self.a_det] if len(self.a_det) else np.zeros(0, np.int32)


def _cpu_rows(run: Run, t: _Tables) -> list[CpuRow]:
    """summary.json's CPU rows, each with its top explained source and its unexplained share.

    One rule with the headline: the biggest *explained* source on this CPU (by its time inside
    this CPU's detours) and, apart, the unexplained share of that time."""
    cpus: list[CpuRow] = []
    for c in run.cpus:
        row: CpuRow = {**(run.summary.get("cpus") or {}).get(str(c), {}), "cpu": c}
        on = np.isin(t.a_det, np.flatnonzero(t.d_cpu == c))
        cpu_ns = float(t.a_ns[on].sum())
        explained = on & (t.a_kind != "unexplained")
        top: TopSource | None = None
        if explained.any():
            keys = t.a_kind[explained] + "\x1f" + t.a_name[explained]
            u, inv = np.unique(keys, return_inverse=True)
            sums = np.bincount(inv, weights=t.a_ns[explained])
            k, n = str(u[int(np.argmax(sums))]).split("\x1f")
            top = {"kind": k, "name": n, "share": float(sums.max() / max(1.0, cpu_ns))}
        row["top_source"] = top
        row["unexplained_share"] = float(t.a_ns[on & (t.a_kind == "unexplained")].sum() / cpu_ns) if cpu_ns else 0.0
        cpus.append(row)
    return cpus


def _timeline(run: Run, t: _Tables, duration_ns: int) -> list[Timeline]:
    """Noise over time per CPU, stacked by source kind: each attribution row's ns is laid from
    where the source first took time in its detour, and split over the bins it spans (a 50 ms
    detour must not put 2x a bin in one bin)."""
    bin_ns = max(1, int(np.ceil(duration_ns / TIMELINE_BINS)))
    nb = int(np.ceil(duration_ns / bin_ns)) + 1
    t0 = t.d_start[t.a_det] + t.a_off if len(t.a_det) else np.zeros(0, np.int64)
    att_cpu = t.a_cpu
    timeline: list[Timeline] = []
    for c in run.cpus:
        series: dict[str, list[float]] = {}
        on = att_cpu == c
        for k in KINDS:
            sel = np.flatnonzero(on & (t.a_kind == k))
            if not len(sel):
                continue
            acc = _spread(t0[sel], t.a_ns[sel], bin_ns, nb)
            series[k] = [round(float(x), 3) for x in acc[: nb - 1] / bin_ns * 1e6]
        timeline.append({"cpu": c, "bin_s": bin_ns / 1e9, "bins": nb - 1, "ppm_by_kind": series})
    return timeline


def _source_distributions(rows: list[SourceRow], t: _Tables) -> list[SourceDistribution]:
    """Per-occurrence durations of the major sources, log binned."""
    dists: list[SourceDistribution] = []
    for kind, name in [(x["kind"], x["name"]) for x in rows[:MAJOR_SOURCES]]:
        v = t.a_ns[(t.a_kind == kind) & (t.a_name == name)]
        if len(v):
            e = log_bins(float(v.min()), float(v.max()), per_decade=10)
            dists.append(
                {
                    "kind": kind,
                    "name": name,
                    "label": source_label(kind, name),
                    "n": len(v),
                    "median_ns": float(np.median(v)),
                    **histogram(v, e),
                }
            )
    return dists


def _chains(rows: list[ChainRow], total_noise: int) -> list[Chain]:
    return [
        {
            "sources": list(ch["sources"]),
            "label": " → ".join(x.split(":", 1)[-1] for x in ch["sources"]),
            "count": int(ch["count"]),
            "total_ns": int(ch["total_ns"]),
            "share": ch["total_ns"] / total_noise if total_noise else 0.0,
        }
        for ch in rows[:TOP_CHAINS]
    ]


def _unexplained(run: Run, t: _Tables) -> Unexplained:
    """summary.json's unexplained part, with the detours nothing traced at all, per CPU, and its histogram."""
    un: Unexplained = {**(run.summary.get("unexplained") or {"count": 0, "total_ns": 0, "share": 0.0, "likely": ""})}
    un_sel = t.a_kind == "unexplained"
    whole = 0
    if len(t.a_det):
        # Detours with nothing traced at all: one row, unexplained.
        per_det = np.bincount(t.a_det, minlength=len(t.d_dur))
        whole = int(np.sum(per_det[t.a_det[un_sel]] == 1))
    v = t.a_ns[un_sel]
    un["whole_detours"] = whole
    un["per_cpu_ns"] = {str(c): int(t.a_ns[un_sel & (t.a_cpu == c)].sum()) for c in run.cpus}
    if len(v):
        un["median_ns"] = float(np.median(v))
        un["hist"] = histogram(v, log_bins(float(v.min()), float(v.max()), per_decade=10))
    else:
        un["median_ns"] = 0.0
        un["hist"] = None
    return un


def build_report_data(run: Run) -> ReportData:
    """The report's content for one run (see the module docstring)."""
    s = run.summary  # summary.json (measure/summary.py's Summary), checked by the kind's schema at load
    t = _Tables.of(run)
    d_start, d_dur = t.d_start, t.d_dur
    duration_ns = max(run.duration_ns, int(d_start.max() + d_dur.max()) if len(d_start) else 1)
    total_noise = int(d_dur.sum())
    threshold = float(header(run)["threshold_ns"] or 1000)
    cpus = _cpu_rows(run, t)
    edges = log_bins(
        min(threshold, float(d_dur.min())) if len(d_dur) else threshold,
        float(d_dur.max()) if len(d_dur) else threshold * 10,
    )
    hists: list[CpuHistogram] = [{"cpu": c, **histogram(d_dur[t.d_cpu == c], edges)} for c in run.cpus]
    sources: list[SourceRow] = (s.get("sources") or [])[:TOP_SOURCES]
    un = _unexplained(run, t)
    return {
        "header": header(run),
        "cpus": cpus,
        "total_noise_ns": total_noise,
        "histograms": hists,
        "timeline": _timeline(run, t, duration_ns),
        "sources": sources,
        "source_distributions": _source_distributions(s.get("sources") or [], t),
        "chains": _chains(s.get("chains") or [], total_noise),
        "unexplained": un,
        "headline": headline(run, cpus, sources, un),
    }


def headline(run: Run, cpus: list[CpuRow], sources: list[SourceRow], un: Unexplained) -> str:
    """One sentence a reader gets at a glance."""
    if not cpus:
        return "No CPUs were measured."
    worst = max(cpus, key=lambda c: c.get("noise_ppm", 0.0))
    parts = [
        (
            f"CPU {worst['cpu']} lost {ppm(worst.get('noise_ppm', 0.0))} "
            f"({percent(worst.get('noise_ppm', 0.0) / 1e6)} of its time) "
            f"to {count(worst.get('detours', 0), 'detour')}"
        )
    ]
    if sources:
        top = sources[0]
        period = top.get("period_s")
        per = f", every {format_ns(period * 1e9)}" if period else ""
        parts.append(
            f"the biggest source is {source_label(top['kind'], top['name'])} "
            f"({percent(top['share'], 2)} of all noise{per})"
        )
    if un.get("share"):
        parts.append(f"{percent(un['share'], 2)} is unexplained")
    return "; ".join(parts) + "."
