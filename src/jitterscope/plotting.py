"""The one matplotlib setup behind every figure jitterscope draws.

Every figure (report, cluster page, simulate/fit --plots, ptts --plots, doe's
boxplot, and those of commands to come) is drawn with the pyplot this module
hands out and saved through `save` or `svg_text`, so all of them share one
backend (Agg: no display needed), one SVG setting (stable element ids, no date
or creator stamp: the same data gives byte-identical files) and one place to
change either.  matplotlib costs most of a CPU-second to import here (less
without its docstring tables: `matplotlib_first`), so it is imported on first
use, not when a command module is loaded.

How a command draws::

    from jitterscope import plotting

    plt = plotting.pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(xs, ys)
    plotting.save(fig, out_dir / "latency.svg")     # or: svg = plotting.svg_text(fig) to inline it

`save` and `svg_text` close the figure.  `STYLE` is the house style of the HTML
pages (text kept as text in the SVG, small fonts, no top/right spines); use it
with `with plt.rc_context(plotting.STYLE): ...` where a figure sits in a page.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from jitterscope import childgroup
from jitterscope.atomic import atomic_path

A = TypeVar("A")

# Saved with every SVG: no "Date" (files differ between runs otherwise) and no "Creator" (matplotlib's version).
SVG_METADATA: dict[str, str | None] = {"Date": None, "Creator": None}
STYLE: dict[str, str | float | bool | list[str]] = {  # matplotlib rcParams
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "font.family": ["DejaVu Sans", "sans-serif"],
}
PNG_DPI = 110
# A curve of n values (an empirical CDF, a Q-Q plot, a series over a run) is drawn at no more than this many
# points: finer than a figure's pixels, and an SVG's size and drawing time stay the same however long the run
# (a Q-Q plot of 10,000 delays drew 50,000 markers, 5 MB and 4 s).
CURVE_POINTS = 2000


def _no_property_table(artist: Any) -> str:
    return ""


def matplotlib_first() -> None:
    """matplotlib imported the way every figure here needs it: Agg, and no property tables in docstrings.

    matplotlib writes a table of every settable property into the docstrings of each Artist class it defines
    (`matplotlib.artist.kwdoc`, called at import for ~100 classes): a third of its import, 0.3 of ~1 CPU-s,
    paid by every process that draws (sync's figures while the user waits).  Nothing here reads a docstring;
    the tables are left empty.  Call it before any other matplotlib import (which may define artists)."""
    import matplotlib.artist  # lazy: most commands never draw

    matplotlib.artist.kwdoc = _no_property_table
    matplotlib.use("Agg")


def pyplot() -> ModuleType:
    """matplotlib.pyplot on the Agg backend with the shared settings applied."""
    matplotlib_first()
    import matplotlib.pyplot as plt

    # Element ids in an SVG are random unless salted; a fixed salt makes them the same for the same figure.
    plt.rcParams["svg.hashsalt"] = "jitterscope"
    # Every SVG keeps its words as text (smaller, searchable, readable by tests), not only the page's figures.
    plt.rcParams["svg.fonttype"] = "none"
    return plt


def _savefig(fig: Any, target: Any, fmt: str, **kwargs: Any) -> None:
    if fmt == "svg":
        kwargs.setdefault("metadata", SVG_METADATA)
    elif fmt == "png":
        kwargs.setdefault("dpi", PNG_DPI)
    fig.savefig(target, format=fmt, **kwargs)


_SETS: list[list[Path]] = []


@contextlib.contextmanager
def figure_set() -> Iterator[None]:
    """The figures one command writes (`--plots DIR`) are one set: a failure part-way (a full
    disk) removes those of the set already written, so no half set is left."""
    written: list[Path] = []
    _SETS.append(written)
    try:
        yield
    except BaseException:
        for p in written:
            with contextlib.suppress(OSError):
                p.unlink()
        raise
    finally:
        _SETS.pop()


def save(fig: Any, path: str | Path, close: bool = True, **kwargs: Any) -> Path:
    """Write `fig` to `path` in the format its suffix names (svg, png, pdf); close it unless told not to."""
    path = Path(path)
    try:
        with atomic_path(path) as tmp:  # whole or not at all
            _savefig(fig, tmp, path.suffix.lstrip(".").lower() or "svg", **kwargs)
        if _SETS:
            _SETS[-1].append(path)
    finally:
        if close:
            pyplot().close(fig)
    return path


def svg_text(fig: Any, **kwargs: Any) -> str:
    """`fig` as SVG text (to inline in a page), then closed."""
    buf = io.StringIO()
    try:
        _savefig(fig, buf, "svg", **kwargs)
    finally:
        pyplot().close(fig)
    return buf.getvalue()


def draw_all(jobs: Sequence[tuple[Callable[[A], str], A]]) -> list[str]:
    """Each job's figure, `draw(data)` -> SVG text, in order.  Drawing is CPU-bound Python (matplotlib, 0.2-0.8 s
    a figure), and a page has one or two figures per measured CPU (128 or more for a 64-CPU run): with more than
    one figure and one CPU they are drawn in workers forked from this process, one per CPU it may use.  Not
    from a process that runs another thread (a command run in-process by a test runner): a fork copies the
    locks other threads hold, so the figures are drawn here, one after the other."""
    workers = min(len(os.sched_getaffinity(0)), len(jobs))
    if workers < 2 or threading.active_count() > 1:
        return [draw(data) for draw, data in jobs]
    with childgroup.ForkedPool(workers) as pool:
        pending = [pool.submit(draw, data) for draw, data in jobs]
        return [pool.result(p) for p in pending]


def drawn(make: Callable[[], Any]) -> str:
    """`make()`'s figure as SVG text: a draw_all job for a function that returns a figure (`make` a
    functools.partial of a module-level function, so that a worker can be sent it)."""
    return svg_text(make())


def curve_ranks(n: int, points: int = CURVE_POINTS, tail: int = 0) -> np.ndarray:
    """The ranks (0-based, ascending) of n sorted values that a curve through them is drawn at: all of them
    when n <= points, else `points` evenly spaced ranks (the first and the last included) and the `tail`
    highest, where distributions of delays differ most and evenly spaced ranks would keep few."""
    if n <= points:
        return np.arange(n, dtype=np.int64)
    spread = np.linspace(0, n - 1, points).astype(np.int64)
    return np.unique(np.concatenate([spread, np.arange(max(0, n - tail), n, dtype=np.int64)]))


def envelope(y: np.ndarray, points: int = CURVE_POINTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A series too long to draw point by point, as (first index, min, max) of `points` // 2 consecutive
    buckets: drawn as a band, every spike stays visible at its height (a line through every point of an
    hour-long series is millions of SVG vertices; one value per bucket would hide the spikes)."""
    y = np.asarray(y, np.float64)
    if not len(y):
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    starts = np.unique(np.linspace(0, len(y), max(1, points // 2), endpoint=False).astype(np.int64))
    return starts, np.minimum.reduceat(y, starts), np.maximum.reduceat(y, starts)
