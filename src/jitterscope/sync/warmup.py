"""The analysis's and the report's imports, done while CMD runs rather than after it.

A sync run waits for CMD with nothing to do, then needs its analysis's modules, and with the trace the
parser and the kernel's symbol table (0.3 s to read /proc/kallsyms), with the report matplotlib: about a
CPU-second, all of it added to the user's wall time when done after CMD.  (pandas is not among them: the
command refuses it, nopandas.py.)
(scipy.stats, for the fit, is imported by the fit's own process, forked before CMD: sync/runner.py.  It
starts that import the moment CMD ends (`fit_imports`), on the CPU the matching leaves free: begun with the
fit itself, after the matching, it left the summary waiting 0.2 s for the fit on pigz.)
A background thread does what this run will need during CMD at the lowest priority (nice 19 for that
thread only), so a program that keeps every CPU busy is not slowed by it; when CMD ends the thread is
raised back to normal priority (`finish`) so that, on a busy machine, the analysis does not wait on a
starved import.  An import that fails here fails again, with its real error, where the analysis needs it."""

from __future__ import annotations

import contextlib
import importlib
import os
import threading

ALWAYS = ("jitterscope.sync.build",)
TRACE = ("jitterscope.sync.causes", "jitterscope.tracing.parse")
REPORT = ("jitterscope.sync.report", "jitterscope.report.page", "matplotlib.backends.backend_svg")
NICE = 19


def fit_imports() -> None:
    """Run in the fit's process when CMD ends: the fit's imports (scipy.stats, 0.6 s), before the fit."""
    importlib.import_module("jitterscope.simulate.fitting")


class Warmup:
    """The warm-up thread of one sync run: `trace`, `report`: whether the run traces and writes its report."""

    def __init__(self, trace: bool = True, report: bool = True) -> None:
        self.modules = ALWAYS + (TRACE if trace else ()) + (REPORT if report else ())
        self.trace, self.report = trace, report
        self._tid: int | None = None
        self._thread = threading.Thread(target=self._run, name="js-sync-warmup", daemon=True)

    def start(self) -> Warmup:
        self._thread.start()
        return self

    def native_id(self) -> int:
        """The thread's id (0 before it has started)."""
        return self._thread.native_id or 0

    def _run(self) -> None:
        self._tid = threading.get_native_id()
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, self._tid, NICE)  # this thread only (Linux: nice is per task)
        try:
            # in the order CMD's end needs them: the trace's stop first, the report last
            if self.trace:
                from jitterscope.tracing import symbols

                symbols.table()  # the trace's stop names kernel addresses from it
            for name in self.modules:
                importlib.import_module(name)
            from jitterscope import kinds

            kinds.all()  # the run is written and read back through its kind
            if self.report:
                from jitterscope import plotting

                plotting.pyplot()  # the backend and settings the report draws with
        except Exception:  # noqa: BLE001 (the analysis imports it again and reports the error)
            return

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the warm-up to end; whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def finish(self) -> None:
        """CMD has ended: whatever is left to import is now on the analysis's path, so at normal priority
        (raising a priority needs CAP_SYS_NICE; without it the thread stays at nice 19)."""
        if self._tid is not None and self._thread.is_alive():
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, self._tid, 0)
