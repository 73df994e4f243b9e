"""Figures of `whatif`: the DVFS factor per subframe (the paper's Figs. 11-12: factor over ~30 subframes of
one thread, dips below 1.0 after over-compensation, saturation at the table's top)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from jitterscope import plotting
from jitterscope.whatif.results import TraceRow

WINDOW = 60  # subframes shown (Figs. 11-12 show 30)
BEFORE = 5  # subframes before the first change of factor


def _thread(trace: list[TraceRow]) -> int:
    """The thread whose factor left 1.0 most often (ties: the most subframes)."""
    moved: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for r in trace:
        moved[r["tid"]][0] += r["factor"] != 1.0
        moved[r["tid"]][1] += 1
    return max(moved, key=lambda t: (moved[t][0], moved[t][1], -t))


def factor_trace(trace: list[TraceRow], table: list[float], title: str) -> Any:
    """One step line per k of the busiest-controlled thread, from just before its first change."""
    plt = plotting.pyplot()
    tid = _thread(trace)
    rows = [r for r in trace if r["tid"] == tid]
    changed = [r["subframe"] for r in rows if r["factor"] != 1.0]
    lo = max(min(changed) - BEFORE, 0) if changed else 0
    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots(figsize=(6.5, 3.2))
        for k in sorted({r["k"] for r in rows}):
            sel = [r for r in rows if r["k"] == k and lo <= r["subframe"] < lo + WINDOW]
            ax.step([r["subframe"] for r in sel], [r["factor"] for r in sel], where="post", label=f"k = {k}")
        ax.set_ylim(min(table) - 0.02, max(table) + 0.02)
        ax.axhline(1.0, color="#999", linewidth=0.6, linestyle=":")
        ax.set_xlabel(f"subframe of thread {tid}")
        ax.set_ylabel("DVFS factor f/f0")
        ax.set_title(title)
        ax.legend(fontsize=7)
        fig.tight_layout()
    return fig
