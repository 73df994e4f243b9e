"""Figures of a sync run: the timeline per thread (waits, jitter by type, lost time by cause) and the
distribution of T per jitter type."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from jitterscope import plotting
from jitterscope.measure.attribution import merge_spans
from jitterscope.units import format_ns

if TYPE_CHECKING:
    from matplotlib.artist import Artist

PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD"]
WAIT_COLOR = "#D9D9D9"
# Spans of one lane and colour closer than this fraction of the run are drawn as one bar: the figure is
# 10 inches wide, so they are within a pixel of each other anyway, and the drawing stays a few thousand
# rectangles per lane however many waits the run had (one bar per wait cost seconds per thousand).
RESOLUTION = 1 / 4000


def bars_patch(rects: np.ndarray, height: float, color: str) -> Any:
    """Rectangles (x0, x1, y0 per row, all `height` high) as one filled path: one SVG element for all of
    them rather than one per rectangle (drawing thousands of separate bars took seconds)."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    x0, x1, y0 = rects[:, 0], rects[:, 1], rects[:, 2]
    y1 = y0 + height
    verts = np.stack([np.column_stack(p) for p in ((x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0))], axis=1)
    codes = np.tile(np.array([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], np.uint8), len(x0))
    return PathPatch(Path(verts.reshape(-1, 2), codes), facecolor=color, edgecolor="none", linewidth=0, snap=True)


def timeline(
    lanes: list[tuple[int, str]],
    waits: tuple[np.ndarray, np.ndarray, np.ndarray],
    bars: list[tuple[str, float, np.ndarray, np.ndarray, np.ndarray]],
    title: str,
) -> Any:
    """One row per thread: its waits (grey; `waits` = tid, enter_ns, exit_ns), then `bars`: (legend key,
    offset in the lane, tid, start_ns, end_ns) per key: the synchronisation jitter coloured by type (upper
    half) and the time lost (holder delay, non-sync) coloured by its top kernel cause (lower half)."""
    plt = plotting.pyplot()
    tids = np.array([tid for tid, _ in lanes], np.int64)
    ends = [np.max(w, initial=0) for w in (waits[2],)] + [np.max(b[4], initial=0) for b in bars]
    gap = max(ends, default=0) / 1e6 * RESOLUTION

    def draw(
        ax: Any, tid: np.ndarray, start: np.ndarray, end: np.ndarray, y0: float, h: float, c: str
    ) -> Artist | None:
        rects = []
        for lane, t in enumerate(tids):
            sel = tid == t
            if not sel.any():
                continue
            s, e = merge_spans(start[sel] / 1e6, np.maximum(end[sel], start[sel] + 1) / 1e6, gap)
            rects.append(np.column_stack([s, e, np.full(len(s), lane + y0)]))
        if not rects:
            return None
        r = np.concatenate(rects)
        ax.update_datalim([(r[:, 0].min(), r[:, 2].min()), (r[:, 1].max(), r[:, 2].max() + h)])
        return ax.add_artist(bars_patch(r, h, c))

    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots(figsize=(10, 1.0 + 0.5 * max(1, len(lanes))))
        draw(ax, waits[0], waits[1], waits[2], -0.4, 0.8, WAIT_COLOR)
        colors: dict[str, str] = {}
        handles: dict[str, Artist] = {}  # a legend entry per key
        for key, y0, tid, start, end in bars:
            c = colors.setdefault(key, PALETTE[len(colors) % len(PALETTE)])
            h = draw(ax, tid, start, end, y0, 0.4, c)
            if h is not None:
                handles[key] = h
        ax.autoscale_view()
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
    """The empirical CDF of T per jitter type, log time axis in plain units, the threshold N marked."""
    plt = plotting.pyplot()
    from matplotlib.ticker import FuncFormatter, NullFormatter

    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots(figsize=(6.5, 3.5))
        for i, (name, v) in enumerate(groups):
            n = len(v)  # the legend counts intervals, not the points drawn
            x = np.maximum(np.sort(np.asarray(v, np.float64)), 1.0)
            y = np.arange(1, n + 1) / max(n, 1)
            k = plotting.curve_ranks(n)
            x, y = x[k], y[k]
            ax.step(x, y, where="post", color=PALETTE[i % len(PALETTE)], label=f"{name} ({n:,})")
        ax.axvline(threshold_ns, color="#333", linestyle=":", linewidth=0.8, label="N")
        ax.set_xscale("log")
        # "10 us" rather than matplotlib's 10^x labels, whose math text cost a quarter second per report
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_ns(v).replace(" ", "\u2009")))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("T: release -> return, or the call's own time")
        ax.set_ylabel("fraction of intervals")
        ax.set_title(title)
        ax.legend(fontsize=7, loc="lower right")  # "best" searches every point of every curve
        fig.tight_layout()
    return fig
