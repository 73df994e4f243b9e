"""The analysis's and the report's imports, done while CMD runs rather than after it.

A sync run waits for CMD with nothing to do, then needs its analysis's modules, and with the trace the
parser and the kernel's symbol table (0.1-0.3 s to read /proc/kallsyms, unless this boot's kernel names are known:
tracing/symbols.py), with the report matplotlib: about a
CPU-second, all of it added to the user's wall time when done after CMD.  (pandas is not among them: the
command refuses it, nopandas.py.)
Two helper processes, forked before CMD (sync/runner.py), do their own imports meanwhile: the fit's
(numpy and scipy.special) and, with the report, the one that draws its figures while the analysis finishes (matplotlib).
They start them as CMD starts, at an even lower priority than the warm-up's (`lower_priority`), and are raised
back to the policy they had when CMD ends (`raise_priority`): imported after CMD, as the fit's was, the import
and the fit (a second and a half of CPU on pigz) were done on the CPU the matching needed, and the summary
waited for them.  Where a lowered task could not be raised back (`can_leave_idle`: a container's root may
lack CAP_SYS_NICE) they import after CMD, at the priority they have.
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
REPORT = ("jitterscope.sync.report", "jitterscope.report.page")
DRAW = ("matplotlib.backends.backend_svg",)  # the report's figures, where they are drawn (`draw_imports`)
NICE = 19


def fit_imports() -> None:
    """Run in the fit's process: the fit's imports (scipy.special, 0.2 s; no scipy.stats), before the fit."""
    importlib.import_module("jitterscope.simulate.fitting")


def draw_imports() -> None:
    """Run in the process that draws the report's figures (sync/runner.py: forked before CMD, so that they are
    drawn while the analysis finishes): matplotlib and the settings the report draws with."""
    from jitterscope import plotting

    plotting.pyplot()  # first: it sets up matplotlib before anything of it is imported
    for name in DRAW:
        importlib.import_module(name)
    importlib.import_module("jitterscope.sync.plots")


def can_leave_idle() -> bool:
    """Whether a task of this process lowered to SCHED_IDLE can be raised back: that needs CAP_SYS_NICE in the
    machine's own user namespace or RLIMIT_NICE 20, which euid 0 does not imply (a container's root), while
    lowering needs nothing.  Asked of the kernel by a thread of this process that lowers itself, tries and ends."""
    ok: list[bool] = []

    def probe() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # 0: this thread
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            ok.append(True)
        except OSError:
            ok.append(False)

    t = threading.Thread(target=probe, name="js-sync-nice")
    t.start()
    t.join()
    return ok == [True]


Policy = tuple[int, int]  # a task's scheduling policy and priority, as it was before `lower_priority`


def lower_priority(pid: int) -> Policy | None:
    """Process `pid` (the helper forked before CMD, idle) to SCHED_IDLE, below even the warm-up thread's
    nice 19, while CMD runs: what CMD leaves of the CPUs goes to the warm-up first, whose imports the analysis
    needs from its first step (unfinished, they hold the GIL from it).  Set from here, not by the helper itself,
    so that CMD's end (`raise_priority`) cannot come before it.  Its policy before, or None if not lowered."""
    try:
        before = (os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority)
        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
    except OSError:
        return None
    return before


def raise_priority(pid: int, before: Policy) -> None:
    """CMD has ended: every thread of process `pid` (lowered by `lower_priority`; threads it started since
    took its policy) back to the policy it had, whatever it is doing; threads listed again until none is new,
    since one may start another meanwhile."""
    done: set[int] = set()
    while True:
        try:
            tids = {int(t) for t in os.listdir(f"/proc/{pid}/task")} - done
        except (OSError, ValueError):  # ended
            return
        if not tids:
            return
        for tid in tids:
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                os.sched_setscheduler(tid, before[0], os.sched_param(before[1]))
        done |= tids


class Warmup:
    """The warm-up thread of one sync run: `trace`, `report`: whether the run traces and writes its report;
    `draw`: whether this process draws the report's figures (not when a process of their own does)."""

    def __init__(self, trace: bool = True, report: bool = True, draw: bool = True) -> None:
        self.modules = (
            ALWAYS + (TRACE if trace else ()) + (REPORT if report else ()) + (DRAW if report and draw else ())
        )
        self.trace, self.report, self.draw = trace, report, draw
        self._tid: int | None = None
        self._finished = False  # CMD has ended (`finish`)
        self._lock = threading.Lock()  # the thread's priority is set and raised one at a time
        self._thread = threading.Thread(target=self._run, name="js-sync-warmup", daemon=True)

    def start(self) -> Warmup:
        self._thread.start()
        return self

    def native_id(self) -> int:
        """The thread's id (0 before it has started)."""
        return self._thread.native_id or 0

    def _run(self) -> None:
        with self._lock:  # not lowered at all if CMD has already ended
            self._tid = threading.get_native_id()
            if not self._finished:
                with contextlib.suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, self._tid, NICE)  # this thread only (Linux: nice is per task)
        try:
            # in the order CMD's end needs them: the trace's stop first, the report last
            if self.trace:
                from jitterscope.tracing import symbols

                symbols.warm()  # the trace's stop names kernel addresses
            for name in self.modules:
                importlib.import_module(name)
            from jitterscope import kinds

            kinds.all()  # the run is written and read back through its kind
            if self.report and self.draw:
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
        with self._lock:
            self._finished = True
            if self._tid is not None and self._thread.is_alive():
                with contextlib.suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, self._tid, 0)
