"""The analysis's and the report's imports, done while CMD runs rather than after it.

A sync run waits for CMD with nothing to do, then needs scipy.stats (the fit), matplotlib (the report),
the trace parser and pyarrow's pandas shim (about a second of imports on this kind of machine) and the
kernel's symbol table (0.3 s to read /proc/kallsyms): all of it added to the user's wall time when done
after CMD.  A background thread imports them during CMD at
the lowest priority (nice 19 for that thread only), so a program that keeps every CPU busy is not
slowed by it; when CMD ends the thread is raised back to normal priority (`finish`) so that, on a busy
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

    def finish(self) -> None:
        """CMD has ended: whatever is left to import is now on the analysis's path, so at normal priority
        (raising a priority needs CAP_SYS_NICE; without it the thread stays at nice 19)."""
        if self._tid is not None and self._thread.is_alive():
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, self._tid, 0)
