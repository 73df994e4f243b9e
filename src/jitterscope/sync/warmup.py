"""The analysis's and the report's imports, done while CMD runs rather than after it.

A sync run waits for CMD with nothing to do, then needs scipy.stats (the fit), matplotlib (the report),
the trace parser and pyarrow's pandas shim (about a second of imports on this kind of machine), the
kernel's symbol table (0.3 s to read /proc/kallsyms) and matplotlib's fonts and mathtext: all of it
added to the user's wall time when done after CMD.  A background thread does them during CMD at the
lowest priority (nice 19 for that thread only), so a program that keeps every CPU busy is not slowed
by it; when CMD ends the thread is raised back to normal priority (`finish`) so that, on a busy
machine, the analysis does not wait on a starved import.  An import that fails here fails again, with
its real error, where the analysis needs it."""

from __future__ import annotations

import contextlib
import importlib
import os
import threading

MODULES = (
    "jitterscope.sync.causes",
    "jitterscope.tracing.parse",
    "jitterscope.simulate.fitting",
    "jitterscope.sync.report",
    "jitterscope.report.page",
    "matplotlib.backends.backend_svg",
    "pandas",
)
NICE = 19


class Warmup:
    """The warm-up thread of one sync run."""

    def __init__(self) -> None:
        self._tid: int | None = None
        self._ended = threading.Event()
        self._drawing = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="js-sync-warmup", daemon=True)

    def start(self) -> Warmup:
        self._thread.start()
        return self

    def _run(self) -> None:
        self._tid = threading.get_native_id()
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, self._tid, NICE)  # this thread only (Linux: nice is per task)
        for name in MODULES:
            try:
                if name == "matplotlib.backends.backend_svg":
                    from jitterscope import plotting

                    plotting.pyplot()  # the backend and settings the report draws with
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 (the analysis imports it again and reports the error)
                return
        from jitterscope import kinds
        from jitterscope.tracing import symbols

        kinds.all()
        symbols.table()  # the trace's stop names kernel addresses from it
        with self._drawing:
            if not self._ended.is_set():  # matplotlib is not drawn from two threads at once
                _draw_once()

    def finish(self) -> None:
        """CMD has ended: whatever is left to import is now on the analysis's path, so at normal priority
        (raising a priority needs CAP_SYS_NICE; without it the thread stays at nice 19).  A warm-up figure
        being drawn is finished first: the report draws later, and never beside it."""
        self._ended.set()
        if self._tid is not None and self._thread.is_alive():
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, self._tid, 0)
        with self._drawing:
            pass


def _draw_once() -> None:
    """A small figure like the report's, drawn to nowhere: the fonts, the SVG writer and the mathtext
    grammar (the log axis's tick labels) are loaded once per process, 0.3 s at the report otherwise.
    A bare Figure, not pyplot: pyplot's figure registry is not for two threads."""
    import io

    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1))
    ax = fig.subplots()
    ax.set_xscale("log")
    ax.step([1.0, 1e3], [0.0, 1.0], where="post", label="T")
    ax.set_title("warm-up")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(io.StringIO(), format="svg")
