"""measure's steps of the session lifecycle (session.py): the probe, with a kernel trace the session owns.

setup    capture.json, the trace (`session.trace`), `before_probe`, the probe (this process off its CPUs)
capture  wait for the probe, showing progress; a Ctrl-C ends it early
stop     stop the probe and wait for its result; capture.json records it (raw first: measure/capture.py)
analyze  the tables and summary from the raw capture (measure/build.py), then the raw probe files go
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitterscope import session as lifecycle
from jitterscope import sysinfo
from jitterscope.humanize import seconds
from jitterscope.measure import build as analysis
from jitterscope.measure import capture
from jitterscope.measure.probe import Probe, ProbeResult
from jitterscope.progress import Progress

if TYPE_CHECKING:
    from jitterscope.measure.lifecycle import MeasureOptions


class MeasureSteps:
    """One measurement.  `doing` names the stage a failure interrupted ("measuring", "analysing")."""

    kind = "measure"

    def __init__(
        self,
        opts: MeasureOptions,
        run_dir: Path,
        meta: dict[str, Any],
        tracing_ok: bool,
        on_tick: Callable[[float], None] | None = None,
        before_probe: Callable[[], None] | None = None,
    ) -> None:
        self.opts, self.run_dir, self.meta, self.tracing_ok = opts, run_dir, meta, tracing_ok
        self.on_tick, self.before_probe = on_tick, before_probe
        self.doing = "measuring"
        self.cap: capture.Capture | None = None
        self.probe: Probe | None = None
        self.probe_started = False
        self.result: ProbeResult | None = None
        self.started_tids: set[int] = set()
        self.own_tids: set[int] = set()
        self.steal_before: dict[int, int] = {}
        self._moved: dict[int, set[int]] = {}  # our threads' CPU masks before they left the probed CPUs

    def start_meta(self) -> dict[str, Any]:
        return self.meta

    def setup(self, s: lifecycle.Session) -> None:
        opts = self.opts
        self.cap = capture.Capture(self.run_dir, self.meta)
        self.steal_before = sysinfo.steal_ticks(opts.cpus)
        trace = s.trace(opts.cpus, self.run_dir / "trace", opts.buffer_kb) if self.tracing_ok else None
        if self.before_probe is not None:
            self.before_probe()
        self.probe = Probe(
            opts.cpus,
            opts.threshold_ns,
            self.run_dir / "detours.raw",
            duration_ns=int(opts.duration_ns),
            fifo_priority=opts.priority,
            end_path=self.run_dir / "detours.end.json",
            trace_off=trace.instance / "tracing_on" if trace and trace.instance else None,
        )
        # The probe inherits this process's CPUs (it refuses a CPU it may not use); this process then
        # leaves the probed CPUs before the probe's threads start measuring, not after: its start-up
        # work showed as 1-2 ms of "jitterscope" on the probed CPU in the first milliseconds of a run.
        self.probe.start(spawned=self._keep_tool_off)
        self.probe_started = s.recorded = True
        # Our threads by id, at the start (every probe thread exists, some still under the probe
        # binary's name) and again at the end: a run recognises only its own (measure/peers.py).
        self.started_tids = sysinfo.thread_ids(os.getpid()) | sysinfo.thread_ids(self.probe.pid)
        self.cap.probe_running(
            self.probe.tsc_hz, self.probe.t0_tsc, self.started_tids, self.probe.thread_tids, self.steal_before
        )

    def _keep_tool_off(self) -> None:
        """Every thread of the tool leaves the probed CPUs (when another CPU is allowed)."""
        self._moved = sysinfo.leave_cpus(set(self.opts.cpus))

    def capture(self, s: lifecycle.Session) -> None:
        assert self.probe is not None
        if _main_loop(self.probe, self.opts, self.on_tick):
            s.interrupt()

    def stop(self, s: lifecycle.Session) -> None:
        probe = self.probe
        try:
            if probe is not None and self.probe_started:
                if probe.running():
                    probe.stop()
                self.own_tids = self.started_tids | sysinfo.thread_ids(os.getpid()) | sysinfo.thread_ids(probe.pid)
                self.result = probe.wait(timeout=30)  # a failed probe raises its error here
        finally:
            sysinfo.restore_affinities(self._moved)
            s.recorded = s.recorded or capture.has_raw(self.run_dir)
        if not s.recorded and s.interrupted:
            raise KeyboardInterrupt  # Ctrl-C before the probe started: still an interrupt (monitor stops on it)
        if self.result is None or self.cap is None:
            return
        if not s.interrupted and _ended_early(self.opts, self.result):
            s.interrupt("the probe was signalled")
        steal_after = sysinfo.steal_ticks(self.opts.cpus)
        ticks = sum(steal_after.get(c, 0) - self.steal_before.get(c, 0) for c in self.opts.cpus)
        self.meta.update(interrupted=s.interrupted, steal_ns=ticks * 1e9 / sysinfo.user_hz())
        self.cap.captured(self.result, s.interrupted, self.meta["steal_ns"], self.own_tids)

    def analyze(self, s: lifecycle.Session) -> Path:
        self.doing = "analysing"
        assert self.result is not None
        if (
            self.opts.progress
        ):  # the capture is complete on disk: a Ctrl-C from here loses nothing; a long analysis is no hang
            print("analysing the capture (Ctrl-C keeps it for `jitterscope analyze`)", file=sys.stderr, flush=True)
        trace_dir = self.run_dir / "trace" if self.tracing_ok else None
        analysis.build_run(self.run_dir, self.meta, self.result, trace_dir, self.own_tids)
        capture.finish(self.run_dir)
        return self.run_dir


def _main_loop(probe: Probe, opts: MeasureOptions, on_tick: Callable[[float], None] | None) -> bool:
    """Wait for the probe, showing progress; True if ended early by Ctrl-C."""
    total_s = opts.duration_ns / 1e9
    bar = Progress("measuring", total_s, unit="s", enabled=opts.progress)
    t0 = time.monotonic()
    try:
        while probe.running():
            elapsed = time.monotonic() - t0
            bar.update(min(elapsed, total_s))
            if on_tick:
                on_tick(elapsed)
            time.sleep(0.1 if total_s < 30 else 0.5)
    except KeyboardInterrupt:
        bar.close("interrupted: finishing the run with what was measured")
        return True
    bar.close()
    return False


def _ended_early(opts: MeasureOptions, result: ProbeResult) -> bool:
    """The probe ends itself when its own clock reaches the duration; a clean end well before
    it means something signalled it (e.g. Ctrl-C in a script that started us in the background:
    our SIGINT is ignored, the probe's is not).  Say so, and record the run as ended early
    rather than as run in full.  (The probe's clock, not ours: a slow start under load is no end.)"""
    total_s = opts.duration_ns / 1e9
    elapsed_s = (result.end_tsc - result.t0_tsc) / result.tsc_hz if result.tsc_hz else total_s
    if elapsed_s >= total_s * 0.95:
        return False
    print(
        f"jitterscope: warning: the probe stopped after {seconds(elapsed_s)} of {seconds(total_s)} "
        f"(it was signalled): the run covers the time measured",
        file=sys.stderr,
    )
    return True
