"""Draw the report's figures as SVG text from the plain data of `data.py`.

Matplotlib renders each figure once; the SVG is both written beside the HTML
and inlined in it (page.Figure prefixes its ids, since several SVGs share one page).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from jitterscope import plotting
from jitterscope.report.page import Figure, Planned, draw_figures
from jitterscope.report.results import Chain, CpuHistogram, Histogram, ReportData, SourceDistribution, Timeline
from jitterscope.units import format_ns

plt = plotting.pyplot()  # this module is imported only to draw (report/__init__.py imports it late)
KIND_COLORS = {"irq": "#3b6fb6", "softirq": "#e8913a", "nmi": "#c0392b", "thread": "#3f9b5a", "unexplained": "#9a9a9a"}
_RC = plotting.STYLE
_NS_FMT = FuncFormatter(lambda v, _: format_ns(v).replace(" ", "\u2009"))
_INT_FMT = FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else "")


def _log_axes(ax: Any) -> None:
    """Log axes labelled at 1-2-5 steps in plain units (no 10^x, no minor ticks: the grid marks the major
    ones, and a log axis's eight minor ticks a decade made drawing the page's figures take 2.3 s instead of
    1.2 s on the 2-vCPU AMD EPYC guest, on a 0.5 s run with six sources, 2026-11-28)."""
    for axis, fmt in ((ax.xaxis, _NS_FMT), (ax.yaxis, _INT_FMT)):
        lo, hi = axis.get_view_interval()
        # Label 1-2-5 within narrow ranges, decades only over wide ones (else labels collide).
        decades = np.log10(hi / max(lo, 1e-9))
        subs = (1.0, 2.0, 5.0) if decades < 1.3 else (1.0,)
        axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=12 if decades <= 4 else 6))
        axis.set_major_formatter(fmt)
        axis.set_minor_locator(NullLocator())


def svg_text(fig: Any) -> str:
    """The figure as SVG text cropped to its drawing, closed."""
    return plotting.svg_text(fig, bbox_inches="tight")


def _bars(ax: Any, edges: list[float], counts: list[int], color: str) -> None:
    """A histogram on log x from precomputed edges; empty bins are not drawn (log y)."""
    lefts = [edges[i] for i, c in enumerate(counts) if c]
    widths = [edges[i + 1] - edges[i] for i, c in enumerate(counts) if c]
    heights = [c for c in counts if c]
    ax.bar(lefts, heights, width=widths, align="edge", color=color, edgecolor="white", linewidth=0.3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(edges[0], edges[-1])
    ax.set_ylim(0.7, max(heights + [1]) * 1.6)
    _log_axes(ax)
    ax.grid(True, which="major", axis="both", color="#e4e4e4", linewidth=0.6)
    ax.set_axisbelow(True)


def histogram_figure(h: CpuHistogram) -> str:
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(5.2, 2.6))
        _bars(ax, h["edges_ns"], h["counts"], "#3b6fb6")
        ax.set_title(f"CPU {h['cpu']}: detour durations ({sum(h['counts']):,} detours)")
        ax.set_xlabel("detour duration (log)")
        ax.set_ylabel("detours (log)")
        return svg_text(fig)


def timeline_figure(t: Timeline) -> str:
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(5.2, 2.6))
        x = [i * t["bin_s"] for i in range(t["bins"])]
        kinds = [k for k in KIND_COLORS if k in t["ppm_by_kind"]]
        if kinds:
            ax.stackplot(
                x,
                [t["ppm_by_kind"][k] for k in kinds],
                labels=kinds,
                colors=[KIND_COLORS[k] for k in kinds],
                step="post",
                linewidth=0,
            )
            ax.legend(loc="upper right", fontsize=7, ncol=len(kinds), frameon=False)
        else:
            ax.plot(x, [0] * len(x), color="#9a9a9a")
        ax.set_xlim(0, t["bins"] * t["bin_s"])
        ax.set_ylim(bottom=0)
        ax.margins(y=0.25)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.set_title(f"CPU {t['cpu']}: noise over time by source kind")
        ax.set_xlabel("time since start (s)")
        ax.set_ylabel(f"noise (ppm per {format_ns(t['bin_s'] * 1e9)})")
        ax.grid(True, axis="y", color="#e4e4e4", linewidth=0.6)
        ax.set_axisbelow(True)
        return svg_text(fig)


def distributions_figure(dists: list[SourceDistribution]) -> str:
    n = len(dists)
    cols = 3 if n > 2 else max(1, n)
    rows = (n + cols - 1) // cols
    with plt.rc_context(_RC):
        fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.2 * rows), squeeze=False)
        for ax, d in zip(axes.flat, dists):
            _bars(ax, d["edges_ns"], d["counts"], KIND_COLORS.get(d["kind"], "#555"))
            ax.set_title(f"{d['label']} (n={d['n']:,})", fontsize=9)
            ax.axvline(d["median_ns"], color="black", linewidth=0.8, linestyle="--")
        for ax in list(axes.flat)[n:]:
            ax.set_visible(False)
        fig.supxlabel("time per occurrence (log); dashed: median", fontsize=8)
        fig.supylabel("occurrences (log)", fontsize=8)
        fig.tight_layout()
        return svg_text(fig)


def _short(label: str, width: int = 48) -> str:
    """Long chains would shrink the whole figure: keep both ends (the table has them whole)."""
    if len(label) <= width:
        return label
    keep = (width - 1) // 2
    return label[:keep] + "…" + label[-keep:]


def chains_figure(chains: list[Chain]) -> str:
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 0.35 * len(chains) + 0.9))
        labels = [_short(c["label"]) for c in chains][::-1]
        vals = [c["total_ns"] for c in chains][::-1]
        bars = ax.barh(range(len(chains)), vals, color="#6a5acd", height=0.65)
        ax.set_yticks(range(len(chains)), labels=labels, fontsize=8)
        ax.xaxis.set_major_formatter(_NS_FMT)
        ax.set_xlabel("total time of detours with this chain")
        for b, c in zip(bars, chains[::-1]):
            ax.text(b.get_width(), b.get_y() + b.get_height() / 2, f" ×{c['count']:,}", va="center", fontsize=7)
        ax.margins(x=0.15)
        ax.set_title("Top chains: sources in succession inside one detour")
        return svg_text(fig)


def unexplained_figure(h: Histogram) -> str:
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(5.2, 2.4))
        _bars(ax, h["edges_ns"], h["counts"], KIND_COLORS["unexplained"])
        ax.set_title("Unexplained time per detour")
        ax.set_xlabel("unexplained ns in one detour (log)")
        ax.set_ylabel("detours (log)")
        return svg_text(fig)


def build_figures(data: ReportData) -> list[Figure]:
    """The run page's figures, in page order (drawn side by side on the CPUs this process may use)."""
    planned: list[Planned] = []
    for h in data["histograms"]:
        if sum(h["counts"]):
            planned.append((f"histogram-cpu{h['cpu']}", f"Detour durations on CPU {h['cpu']}", histogram_figure, h))
    for t in data["timeline"]:
        planned.append((f"timeline-cpu{t['cpu']}", f"Noise over time on CPU {t['cpu']}", timeline_figure, t))
    if data["source_distributions"]:
        title = "Duration distribution of the major sources"
        planned.append(("sources", title, distributions_figure, data["source_distributions"]))
    if data["chains"]:
        planned.append(("chains", "Top chains", chains_figure, data["chains"]))
    hist = data["unexplained"].get("hist")
    if hist:
        planned.append(("unexplained", "Unexplained time per detour", unexplained_figure, hist))
    return draw_figures(planned)
