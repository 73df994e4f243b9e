"""Figures of a sync run: the timeline per thread (waits, jitter by type, lost time by cause) and the
distribution of T per jitter type."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from jitterscope import plotting

PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD"]
WAIT_COLOR = "#D9D9D9"
MAX_BARS = 20_000  # per figure: beyond, the longest are drawn (the others are below a pixel anyway)


def _longest(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    if len(rows) <= n:
        return rows
    return sorted(rows, key=lambda r: r["end_ns"] - r["start_ns"], reverse=True)[:n]


def timeline(
    lanes: list[tuple[int, str]],
    waits: list[dict[str, Any]],
    jitter: list[dict[str, Any]],
    cause_of: dict[int, str],
    title: str,
) -> Any:
    """One row per thread: its waits (grey), the synchronisation jitter inside them coloured by type
    (upper half), the time it lost (holder delay, non-sync) coloured by the top kernel cause (lower half)."""
    plt = plotting.pyplot()
    row = {tid: i for i, (tid, _) in enumerate(lanes)}
    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots(figsize=(10, 1.0 + 0.5 * max(1, len(lanes))))
        for w in _longest([w for w in waits if w["tid"] in row and w["exit_ns"] is not None], MAX_BARS):
            ax.broken_barh(
                [(w["enter_ns"] / 1e6, (w["exit_ns"] - w["enter_ns"]) / 1e6)],
                (row[w["tid"]] - 0.4, 0.8),
                color=WAIT_COLOR,
                linewidth=0,
            )
        sync = [r for r in jitter if r["type"] not in ("hd", "ns") and r["tid"] in row]
        lost = [r for r in jitter if r["type"] in ("hd", "ns") and r["tid"] in row]
        colors: dict[str, str] = {}
        handles: dict[str, Any] = {}
        for rows, y0, key in ((sync, -0.4, lambda r: r["type"]), (lost, 0.0, lambda r: cause_of.get(r["id"], "?"))):
            groups: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
            for r in _longest(rows, MAX_BARS):
                groups[key(r)].append((row[r["tid"]], r["start_ns"] / 1e6, max(r["end_ns"] - r["start_ns"], 1) / 1e6))
            for k, bars in sorted(groups.items(), key=lambda kv: -len(kv[1])):
                c = colors.setdefault(k, PALETTE[len(colors) % len(PALETTE)])
                by_lane: dict[int, list[tuple[float, float]]] = defaultdict(list)
                for lane, s, d in bars:
                    by_lane[lane].append((s, d))
                for lane, spans in by_lane.items():
                    handles[k] = ax.broken_barh(spans, (lane + y0, 0.4), color=c, linewidth=0)
        ax.set_yticks(range(len(lanes)), [name for _, name in lanes], fontsize=7)
        ax.set_ylim(len(lanes) - 0.5, -0.5)
        ax.set_xlabel("ms since the program started")
        ax.set_title(title)
        if handles:
            ax.legend(
                list(handles.values())[:12],
                list(handles)[:12],
                fontsize=7,
                loc="upper left",
                bbox_to_anchor=(1.0, 1.0),
                frameon=False,
            )
        fig.tight_layout()
    return fig


def type_distributions(groups: list[tuple[str, np.ndarray]], threshold_ns: int, title: str) -> Any:
    """The empirical CDF of T per jitter type, log time axis, the threshold N marked."""
    plt = plotting.pyplot()
    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots(figsize=(6.5, 3.5))
        for i, (name, v) in enumerate(groups):
            x = np.sort(np.asarray(v, np.float64)) / 1e3
            x = np.maximum(x, 1e-3)
            ax.step(
                x,
                np.arange(1, len(x) + 1) / len(x),
                where="post",
                color=PALETTE[i % len(PALETTE)],
                label=f"{name} ({len(x):,})",
            )
        ax.axvline(threshold_ns / 1e3, color="#333", linestyle=":", linewidth=0.8, label="N")
        ax.set_xscale("log")
        ax.set_xlabel("T (us): release -> return, or the call's own time")
        ax.set_ylabel("fraction of intervals")
        ax.set_title(title)
        ax.legend(fontsize=7)
        fig.tight_layout()
    return fig
