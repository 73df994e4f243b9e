"""The monitor's main loop: measure a window every interval, keep history,
update metrics, detect new/regressed sources; survive failed windows; stop
cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import ctypes
import gc
import math
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from prometheus_client.exposition import generate_latest

from jitterscope.compare import Thresholds
from jitterscope.errors import JitterscopeError
from jitterscope.humanize import count, percent, ppm, seconds
from jitterscope.measure.lifecycle import measure
from jitterscope.monitor.detect import Detector
from jitterscope.monitor.history import History
from jitterscope.monitor.labels import LabelCap, identity
from jitterscope.monitor.metrics import LastWindow, MonitorState, registry_for
from jitterscope.monitor.server import ADDR, start_server
from jitterscope.monitor.sources import cpu_sources
from jitterscope.rundir import load_run

MeasureFn = Callable[..., Path]
LABEL_IDLE_S = 3 * 3600.0


@dataclass
class MonitorOptions:
    cpus: list[int]
    interval_s: float
    window_s: float
    history: Path
    port: int = 9469
    threshold_ns: float = 1000.0
    trace: bool = True
    priority: int | None = None
    max_windows: int = 100
    max_bytes: int = 512 * 1024**2
    baseline_windows: int = 3
    max_sources: int = 50  # source names holding a label at once (labels.py)
    stop_after: int | None = None  # windows, then exit (tests, benchmarks)
    thresholds: Thresholds = field(default_factory=Thresholds)


def _default_measure() -> MeasureFn:

    return measure


def _release_memory() -> None:
    """Give a window's peak back to the OS: a busy window's tables can be large,
    and Arrow's pool and glibc's arenas otherwise keep that peak for good."""

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


class Monitor:
    def __init__(self, opts: MonitorOptions, measure_fn: MeasureFn | None = None, log: TextIO = sys.stderr) -> None:
        self.opts = opts
        self.measure = measure_fn or _default_measure()
        self.out = log
        self.history = History(opts.history, opts.max_windows, opts.max_bytes)
        self.state = MonitorState(window_s=opts.window_s, interval_s=opts.interval_s)
        self.detector = Detector(opts.cpus, opts.baseline_windows, opts.thresholds)
        # A name gives its label up after LABEL_IDLE_S unseen: longer than Prometheus keeps a series in memory.
        self.labels = LabelCap(opts.max_sources, idle_windows=max(1, math.ceil(LABEL_IDLE_S / opts.interval_s)))
        self.published = replace(self.state)  # what a scrape reads: a copy, swapped whole
        self.registry = registry_for(lambda: self.published)
        self.stopping = False

    def log(self, msg: str) -> None:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        print(f"{stamp} {msg}", file=self.out, flush=True)

    def window(self) -> None:
        """One window: measure, record, detect.  Raises only on a stop request."""
        out = self.history.next_dir()
        seq = self.history.seq
        try:  # measure moves this process off the probed CPUs and back on every path
            run_dir = self.measure(
                cpus=self.opts.cpus,
                duration_ns=self.opts.window_s * 1e9,
                threshold_ns=self.opts.threshold_ns,
                out_dir=out,
                trace=self.opts.trace,
                priority=self.opts.priority,
                report=False,
                progress=False,
            )
            run = load_run(run_dir)
        except KeyboardInterrupt:
            if not (out / "summary.json").exists():
                self.history.discard(out)  # half-written window: nothing to keep
            raise
        except Exception as err:  # noqa: BLE001 (a failed window is logged and skipped, never fatal)
            self.state.failures_total += 1
            self.history.discard(out)
            msg = str(err).splitlines()[0] if str(err) else type(err).__name__
            self.log(f"window {seq} failed: {msg}")
            self._publish()
            return
        s = run.summary
        self.state.windows_total += 1
        self.state.last = LastWindow.of(run)
        self.state.sources = cpu_sources(run, self.labels)
        self.state.folded_total = dict(self.labels.folded_total)
        self.state.lost_events_total += int(s.get("lost_events", 0) or 0)
        self.state.last_end_unix = time.time()
        cpus = ", ".join(
            f"CPU {c} {ppm(v.get('noise_ppm', 0))} ({count(v.get('detours', 0), 'detour')})"
            for c, v in (s.get("cpus") or {}).items()
        )
        lost = int(s.get("lost_events", 0) or 0)
        self.log(
            f"window {seq}: {cpus}; unexplained {percent((s.get('unexplained') or {}).get('share', 0))}"
            + (f"; LOST {count(lost, 'trace event')}" if lost else "")
        )
        if not run.meta.get("interrupted"):
            try:
                for line in self.detector.feed(run):
                    self.log(line)
            except JitterscopeError as err:
                self.log(f"window {seq}: comparison skipped: {err}")
        self.state.regressions = len(self.detector.flagged)
        self.state.changes = [(*self.labels.label(identity(*k)), v) for k, v in self.detector.changes.items()]
        del run
        self.history.prune()
        _release_memory()
        self._publish()

    def _publish(self) -> None:
        # One reference swap: a scrape in the server thread always sees one complete window.
        self.published = replace(self.state)

    @property
    def metrics_text(self) -> str:
        """The metrics as a scrape would get them now."""
        return generate_latest(self.registry).decode("utf-8")

    def run(self) -> int:
        srv = start_server(self.opts.port, self.registry)
        self.log(
            f"monitoring CPUs {','.join(map(str, self.opts.cpus))}: {seconds(self.opts.window_s)} every "
            f"{seconds(self.opts.interval_s)}; history {self.history.root} "
            f"(<= {count(self.opts.max_windows, 'window')}, "
            f"<= {self.opts.max_bytes / 1024**2:.0f} MiB); metrics on http://{ADDR}:{srv.server_port}/metrics"
        )
        old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

        def stop(signum: int, _frame: Any) -> None:
            self.stopping = True
            raise KeyboardInterrupt  # ends a window in progress early (measure writes it whole)

        for s in old:
            signal.signal(s, stop)
        try:
            next_start = time.monotonic()
            while not self.stopping:
                self.window()
                if (
                    self.opts.stop_after is not None
                    and self.state.windows_total + self.state.failures_total >= self.opts.stop_after
                ):
                    break
                next_start += self.opts.interval_s
                while not self.stopping and time.monotonic() < next_start:
                    time.sleep(min(0.2, max(0.0, next_start - time.monotonic())))
                next_start = max(next_start, time.monotonic())
        except KeyboardInterrupt:
            pass
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            srv.shutdown()
            srv.server_close()
        self.log(f"stopped after {count(self.state.windows_total, 'window')} ({self.state.failures_total} failed)")
        return 0
