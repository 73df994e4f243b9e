"""Figures: the schedule's Gantt chart (simulated or measured), latency histograms, bench box plots."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitterscope import plotting

PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD"]


def gantt(bars: list[tuple[int, float, float, str, str]], lanes: list[str], title: str, unit: str) -> Any:
    """Bars (lane, start, finish, label, box) on one row per thread; a figure."""
    plt = plotting.pyplot()
    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots(figsize=(9, 0.5 + 0.45 * max(1, len(lanes))))
        boxes = sorted({b[4] for b in bars})
        color = {b: PALETTE[i % len(PALETTE)] for i, b in enumerate(boxes)}
        span = max((b[2] for b in bars), default=1.0) or 1.0
        for lane, start, finish, label, box in bars:
            ax.barh(
                lane,
                max(finish - start, span * 1e-4),
                left=start,
                height=0.6,
                color=color[box],
                edgecolor="white",
                linewidth=0.5,
            )
            if finish - start > span * 0.04 and len(bars) <= 400:
                ax.text((start + finish) / 2, lane, label, ha="center", va="center", fontsize=7, color="white")
        ax.set_yticks(range(len(lanes)), lanes)
        ax.invert_yaxis()
        ax.set_xlabel(unit)
        ax.set_title(title)
        fig.tight_layout()
    return fig


def schedule_gantt(sched: Any) -> Any:
    thread = sched.plan.thread_of()
    bars = [
        (thread[x.index], sched.plan.start[x.index], sched.plan.finish[x.index], x.name, x.box)
        for x in sched.inst.subboxes
    ]
    lanes = [f"thread{t}" for t in range(len(sched.threads))]
    return gantt(
        bars,
        lanes,
        f"{sched.graph.name}: {sched.options.heuristic} on {len(sched.threads)} threads (simulated)",
        "weight units",
    )


def latency_histogram(latency_ns: np.ndarray, title: str) -> Any:
    plt = plotting.pyplot()
    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots(figsize=(6, 3))
        x = np.asarray(latency_ns, np.float64) / 1e3
        if len(x):
            ax.hist(x, bins=min(100, max(10, int(np.sqrt(len(x))))), color=PALETTE[0])
            for q, style in ((50, "-"), (99, "--"), (99.9, ":")):
                ax.axvline(np.percentile(x, q), color="#333", linestyle=style, linewidth=0.8, label=f"p{q:g}")
            ax.legend()
        ax.set_xlabel("latency (us)")
        ax.set_ylabel("iterations")
        ax.set_title(title)
        fig.tight_layout()
    return fig


def latency_series(latency_ns: np.ndarray, title: str) -> Any:
    plt = plotting.pyplot()
    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots(figsize=(6, 3))
        x = np.asarray(latency_ns, np.float64) / 1e3
        if len(x) <= plotting.CURVE_POINTS:
            ax.plot(np.arange(len(x)), x, linewidth=0.5, color=PALETTE[0])
        else:  # each bucket of iterations as its range: the spikes keep their height
            first, lo, hi = plotting.envelope(x)
            ax.fill_between(first, lo, hi, step="post", linewidth=0.5, color=PALETTE[0], label="min-max per bucket")
            ax.legend(loc="upper right", fontsize=7, frameon=False)
        ax.set_xlabel("iteration")
        ax.set_ylabel("latency (us)")
        ax.set_title(title)
        fig.tight_layout()
    return fig


def boxplots(groups: list[tuple[str, np.ndarray]], title: str, sort_by_median: bool = False) -> Any:
    """One box (quartiles, 1.5 IQR whiskers, min and max marked) per group; the thesis's figure 3.8."""
    plt = plotting.pyplot()
    if sort_by_median:
        groups = sorted(groups, key=lambda g: float(np.median(g[1])) if len(g[1]) else 0.0)
    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots(figsize=(max(5, 0.35 * len(groups) + 2), 3.5))
        data = [np.asarray(v, np.float64) / 1e3 for _, v in groups]
        ax.boxplot(data, showfliers=False, widths=0.6)
        ax.scatter(
            range(1, len(data) + 1),
            [d.max() if len(d) else np.nan for d in data],
            marker="_",
            color="#C44E52",
            label="max",
        )
        ax.set_xticks(
            range(1, len(groups) + 1),
            [g[0] for g in groups],
            rotation=60 if len(groups) > 8 else 0,
            ha="right" if len(groups) > 8 else "center",
            fontsize=7,
        )
        ax.set_ylabel("latency (us)")
        ax.set_title(title)
        ax.legend()
        fig.tight_layout()
    return fig
