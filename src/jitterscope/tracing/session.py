"""A private tracefs instance for one measurement, and the raw capture of it.

Lifecycle (rtla's shape): clean instances left by dead jitterscope processes →
journal the instance's removal → mkdir `instances/jitterscope-<pid>` →
configure it while `tracing_on` is 0 (x86-tsc clock, CPU mask, events, a ring
sized from the rate just measured, the reader's `buffer_percent` watermark) →
start the native reader (tracing/reader.py), off the probed CPUs, splicing every
CPU's full `trace_pipe_raw` pages into `out_dir/cpuN.raw` → `tracing_on` = 1.
Stop: `tracing_on` = 0, the reader drains and reports, save the ring-buffer
statistics, event formats, the kernel symbols and comms the trace needs, then
remove the instance.  The top-level buffer and other instances are never touched.

A start and a stop marker (`jitterscope-start <CLOCK_MONOTONIC ns>`) are
written into the instance from the first probed CPU: they bound the capture
window in TSC and give the TSC rate, so the trace directory is self-contained.

Nothing captured is lost to a crash: pages go to the files as they are read
(the reader, seeing jitterscope gone, stops the instance and drains it), the
event formats and session.json are written before tracing starts, and the
instance's journal entry (`trace_instance`) names the
directory it drains into, so recovery after `kill -9` (`undo_instance`) first
saves the pages still in the kernel's buffer and the ring statistics, then
removes the instance.  `finish_capture` completes such a directory offline.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypedDict

from jitterscope import atomic, boundedio, journal, sysinfo
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal
from jitterscope.runcheck import read_record
from jitterscope.tracing import formats, symbols
from jitterscope.tracing.instances import (
    INSTANCE_PREFIX,
    Drain,
    clean_stale_instances,
    drain_lock,
    drain_record,
    read_stats,
    record_drain,
    rmdir_retry,
    save_stats,
)
from jitterscope.tracing.parse import lost_per_cpu, scan, session_info
from jitterscope.tracing.reader import (
    BUFFER_PERCENT,
    NativeReader,
    RateSample,
    ReaderReport,
    ReaderSummary,
    ring_kb,
)
from jitterscope.tracing.tracefs import TRACE_CLOCK, ensure_tracefs, wanted_events
from jitterscope.units import format_cpumask, format_ns


class SessionInfo(TypedDict, total=False):
    """session.json: how the capture was set up, its markers and window, and what it lost.  Written as the
    session goes (a killed run keeps what it had), completed by finish_capture."""

    instance: str | None
    pid: int
    cpus: list[int]
    buffer_kb: int
    buffer_kb_requested: int
    buffer_percent: int
    expected_events_per_s: int
    clock: str
    page_size: int
    events: list[str]
    missing_events: list[str]
    boot_id: str | None
    reader_pid: int
    start_mono_ns: int
    stop_mono_ns: int
    lost_events: int
    window: list[int]  # [start TSC, end TSC] of the capture
    window_end: str  # "probe": a killed run's window, closed by the probe's end, not by the trace's stop marker
    last_tsc: dict[str, int]  # per CPU, its trace's last event (0: none), where window_end is "probe"
    tsc_hz: float
    scan_error: str
    reader: ReaderSummary


class TraceSession:
    """A private trace instance on `cpus`, captured raw into `out_dir`.  Use as a context manager."""

    def __init__(
        self, cpus: list[int], out_dir: Path, journal: Journal, buffer_kb: int = 4096, grow: bool = True
    ) -> None:
        """`buffer_kb` is each CPU's ring; with `grow` it is the least, larger where the rate
        measured before tracing needs more (tracing/reader.py's rule)."""
        if not cpus:
            raise JitterscopeError("no CPUs to trace")
        self.cpus = sorted({int(c) for c in cpus})
        self.out_dir = Path(out_dir)
        self.journal = journal
        self.buffer_kb = int(buffer_kb)
        self.grow = grow
        self.root: Path | None = None
        self.instance: Path | None = None
        self.events: list[tuple[str, str]] = []
        self.missing: list[str] = []
        self.stale_removed: list[str] = []
        self._rate: RateSample | None = None
        self._reader: NativeReader | None = None
        self._report: ReaderReport | None = None
        self._info: SessionInfo = {}
        self._stats: dict[str, dict[str, int]] = {}
        self._lost: int | None = None
        self._started = False
        self._stopped = False

    # -- helpers --------------------------------------------------------------
    def _w(self, rel: str, value: str) -> None:
        assert self.instance is not None
        try:
            (self.instance / rel).write_text(value)
        except OSError as err:
            raise JitterscopeError(f"cannot set {self.instance / rel} to {value!r}: {err.strerror}") from None

    def _marker(self, label: str) -> int:
        """Write `jitterscope-<label> <monotonic ns>` into the instance from the first probed CPU."""
        assert self.instance is not None
        old = os.sched_getaffinity(0)
        try:
            os.sched_setaffinity(0, {self.cpus[0]})  # tracing_cpumask drops events from other CPUs
            now = time.monotonic_ns()
            fd = os.open(self.instance / "trace_marker", os.O_WRONLY)
            try:
                os.write(fd, f"jitterscope-{label} {now}".encode())
            finally:
                os.close(fd)
        except OSError:
            now = time.monotonic_ns()
        finally:
            os.sched_setaffinity(0, old)
        return now

    # -- lifecycle ------------------------------------------------------------
    def start(self) -> None:
        if self._started:
            raise JitterscopeError("trace session already started")
        self._rate = RateSample.now()  # the ring is sized from the rate until tracing starts (tracing/reader.py)
        root = ensure_tracefs(self.journal)
        if root is None:
            raise JitterscopeError("tracefs not mounted and cannot be mounted")
        self.root = root
        self.stale_removed = clean_stale_instances(root)
        self.events, self.missing = wanted_events(root)
        # readable by its owner alone: its pages and symbols.txt hold kernel addresses (the text's base among them),
        # which kptr_restrict hides from other users; the run's tables beside it name functions, not addresses
        self.out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.out_dir, 0o700)
        inst = root / "instances" / f"{INSTANCE_PREFIX}{os.getpid()}"
        drain: Drain = {"drain_to": str(self.out_dir.absolute()), "cpus": self.cpus}
        self.journal.begin("trace_instance", path=str(inst), **drain)
        try:
            record_drain(inst.name, drain)
            inst.mkdir()
        except OSError as err:
            raise JitterscopeError(f"cannot create trace instance {inst}: {err.strerror}") from None
        self.instance = inst
        self._started = True
        try:
            self._configure()
            self._open_readers()
            self._w("tracing_on", "1")
            self._info["start_mono_ns"] = self._marker("start")
        except BaseException:
            self._teardown()
            raise

    def _configure(self) -> None:
        assert self.root is not None
        self._w("tracing_on", "0")
        self._w("trace_clock", TRACE_CLOCK)
        self._w("tracing_cpumask", format_cpumask(self.cpus))
        for sub, ev in self.events:
            self._w(f"events/{sub}/{ev}/enable", "1")
        info = formats.collect(self.root, self.events)
        formats.save(self.out_dir, info)
        hp = info["header_page"]
        self.page_size = hp["data"][0] + hp["data"][1]
        rate = self._rate.events_per_s(self.cpus) if self._rate and self.grow else 0.0
        ring = ring_kb(max(1, self.buffer_kb), rate, len(self.cpus))
        self._w("buffer_size_kb", str(ring))
        self._w("buffer_percent", str(BUFFER_PERCENT))
        self._info.update(
            {
                "instance": self.instance.name if self.instance else None,
                "pid": os.getpid(),
                "cpus": self.cpus,
                "buffer_kb": ring,
                "buffer_kb_requested": self.buffer_kb,
                "buffer_percent": BUFFER_PERCENT,
                "expected_events_per_s": round(rate),
                "clock": TRACE_CLOCK,
                "page_size": self.page_size,
                "events": [f"{s}/{e}" for s, e in self.events],
                "missing_events": self.missing,
                "boot_id": sysinfo.boot_id(),
            }
        )
        self._write_info()

    def _open_readers(self) -> None:
        assert self.instance is not None
        self._reader = NativeReader(
            self.instance, self.out_dir, self.page_size, self.cpus, drain_lock(self.instance.name)
        )
        self._info["reader_pid"] = self._reader.pid
        self._write_info()

    def stop(self) -> None:
        """End the capture, save everything re-analysis needs, remove the instance."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        error: BaseException | None = None
        try:
            self._info["stop_mono_ns"] = self._marker("stop")
            self._w("tracing_on", "0")
            if self._reader is not None:
                try:
                    self._report = self._reader.stop()  # drains what was left below the watermark
                except JitterscopeError as err:
                    error = err
                self._reader = None
            self._save_stats()
        finally:
            self._teardown()
        self._finish_offline()
        if error is not None:
            raise error

    def _save_stats(self) -> None:
        assert self.instance is not None
        self._stats = save_stats(self.instance, self.out_dir, self.cpus)
        # refined with the pages' missed counts once the scan has run (_finish_offline)
        self._lost = sum(
            st.get("overrun", 0) + st.get("dropped_events", 0) + st.get("commit_overrun", 0)
            for st in self._stats.values()
        )

    def _teardown(self) -> None:
        """Close readers and remove the instance, whatever state we are in."""
        if self._reader is not None:
            self._reader.abandon()
            self._reader = None
        if self.instance is not None:
            try:
                rmdir_retry(self.instance)
                drain_record(self.instance.name).unlink(missing_ok=True)
                drain_lock(self.instance.name).unlink(missing_ok=True)
            except OSError as err:
                # the journal retries at exit; say so rather than fail the measurement
                print(f"jitterscope: warning: could not remove {self.instance} yet: {err.strerror}", file=sys.stderr)
        self._stopped = True

    def _finish_offline(self) -> None:
        # the scan of every CPU's pages on every CPU this process may use: the probe has ended (a single scan
        # of a busy 64-CPU hour, some 7 G events, would take minutes after the run)
        jobs = len(os.sched_getaffinity(0))
        self._info = finish_capture(self.out_dir, self._info, self._stats, report=self._report, jobs=jobs)
        if "lost_events" in self._info:
            self._lost = int(self._info["lost_events"])

    def _write_info(self) -> None:
        write_session_info(self.out_dir, self._info)

    @property
    def lost_events(self) -> int:
        """Kernel events lost so far (ring-buffer overruns + dropped + missed pages)."""
        if self._lost is not None:
            return self._lost
        if self.instance is not None and self._started and not self._stopped:
            total = 0
            for cpu in self.cpus:
                try:
                    st = read_stats(self.instance / "per_cpu" / f"cpu{cpu}" / "stats")
                except OSError:
                    continue
                total += st.get("overrun", 0) + st.get("dropped_events", 0) + st.get("commit_overrun", 0)
            return total
        return 0

    @property
    def info(self) -> SessionInfo:
        return self._info.copy()

    def __enter__(self) -> TraceSession:  # noqa: PYI034 - typing.Self needs Python 3.11
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.stop()
        else:
            # an exception or Ctrl-C: still remove the instance, keep what was captured
            try:
                self.stop()
            except BaseException:  # noqa: BLE001 - the first error is the one being raised
                self._teardown()


def write_session_info(out_dir: Path, info: SessionInfo) -> None:
    atomic.write_text(out_dir / "session.json", json.dumps(info, indent=1) + "\n")


def reader_info(out_dir: Path) -> ReaderSummary | None:
    """session.json's `reader` block (its cost and density), None for a capture without one."""
    try:
        info = json.loads((out_dir / "session.json").read_text())
    except (OSError, ValueError):
        return None
    reader = info.get("reader") if isinstance(info, dict) else None
    if not isinstance(reader, dict):
        return None
    try:
        return read_record(reader, ReaderSummary, out_dir / "session.json")
    except JitterscopeError:  # not what a reader writes: left out, as a capture without one
        return None


def finish_capture(
    out_dir: Path,
    info: SessionInfo,
    stats: dict[str, dict[str, int]],
    end_tsc: int | None = None,
    report: ReaderReport | None = None,
    jobs: int = 1,
) -> SessionInfo:
    """Markers → capture window and TSC rate; symbols and comms the trace needs;
    lost events.  Return the completed session info (also saved as session.json).

    Run at stop, and by `analyze` on the capture of a killed run: then the stop
    marker is missing and `end_tsc` (the probe's end) closes the window, and the
    kernel symbols are only looked up if the machine has not rebooted since.  With `jobs` > 1 the CPUs
    are scanned in parallel, beside the read of the kernel's symbols."""
    info = info.copy()
    same_boot = info.get("boot_id") is None or info.get("boot_id") == sysinfo.boot_id()
    with ThreadPoolExecutor(1) as reader:
        # the kernel's symbol table read (mostly the kernel's time) while the parser scans, unless this boot's
        # names serve
        kernel_symbols = reader.submit(symbols.warm) if same_boot and jobs > 1 else None
        try:
            with journal.scratch("jitterscope-scan-") as tmp:  # journalled: kill -9 leaves nothing
                counts = scan(out_dir, Path(tmp), jobs)
        except JitterscopeError as err:
            info["scan_error"] = str(err)
            write_session_info(out_dir, info)
            return info
        finally:
            if kernel_symbols is not None:
                kernel_symbols.result()
    marks = {m["text"].split()[0]: m for m in counts.get("markers", [])}
    start, stop = marks.get("jitterscope-start"), marks.get("jitterscope-stop")
    if start and stop:
        info["window"] = [int(start["tsc"]), int(stop["tsc"])]
        # Killed between writing the stop marker and recording its time: no clock rate from the markers.
        # Below 10 ms the marker write latency dominates.
        dt_ns = info.get("stop_mono_ns", 0) - info.get("start_mono_ns", 0)
        if "stop_mono_ns" in info and "start_mono_ns" in info and dt_ns > 10_000_000:
            info["tsc_hz"] = (int(stop["tsc"]) - int(start["tsc"])) * 1e9 / dt_ns
    elif start and end_tsc:
        info["window"] = [int(start["tsc"]), int(end_tsc)]
        info["window_end"] = "probe"  # the trace may end before it: parse.open_ended
        info["last_tsc"] = {str(c): int(v.get("last_tsc", 0)) for c, v in counts.get("cpus", {}).items()}
    if same_boot or not (out_dir / "symbols.txt").exists():
        addrs = [int(a, 16) for a in counts.get("addresses", [])]
        atomic.write_text(out_dir / "symbols.txt", symbols.text(symbols.resolve(addrs) if same_boot else {}))
    if same_boot or not (out_dir / "comms.txt").exists():
        comms = []
        for pid in counts.get("unknown_pids", []) if same_boot else []:
            try:
                comms.append(f"{pid} {Path(f'/proc/{pid}/comm').read_text().strip()}\n")
            except OSError:
                continue
        atomic.write_text(out_dir / "comms.txt", "".join(comms))
    info["lost_events"] = int(sum(lost_per_cpu(counts, stats).values()))
    report = report or ReaderReport.load(out_dir / "reader.json")  # a killed run's reader wrote it on its way out
    if report is not None:
        events = sum(int(c.get("events", 0)) for c in counts.get("cpus", {}).values())
        info["reader"] = report.summary(events)
    write_session_info(out_dir, info)
    return info


# A CPU the probe keeps busy takes a tick at least every 4 ms (HZ >= 250), each one a kernel event: a CPU's trace
# that ends this long before the probe did was cut short (the reader killed, its file damaged).
TRACE_GAP_S = 0.1


def trace_gaps(info: SessionInfo, ended: str, hz: float | None) -> list[str]:
    """What a killed run's trace lacks at its end, per CPU: its window closes at the probe's end, and what ran
    after a CPU's last event is unknown (the parser ends its last activity there: parse.open_ended)."""
    if info.get("window_end") != "probe" or "window" not in info:
        return []
    end, out = int(info["window"][1]), []
    for cpu, last in sorted(info.get("last_tsc", {}).items(), key=lambda kv: int(kv[0])):
        if last <= 0:
            out.append(f"the kernel trace of CPU {cpu}: its capture holds no event (detours there are unexplained)")
        elif hz and (end - last) / hz > TRACE_GAP_S:
            gap = format_ns((end - last) / hz * 1e9)
            out.append(f"the kernel trace of CPU {cpu} for the last {gap} before {ended} (detours then: unexplained)")
    return out


def complete_cut_short(
    out_dir: Path, end_tsc: int | None, ended: str, jobs: int = 1, hz: float | None = None
) -> list[str]:
    """Complete offline the capture of a run cut short (its session never stopped: window, symbols,
    comms, lost events); return what could not be recovered.  `ended` names what closes the window
    when the stop marker is missing ("the probe's end", at `end_tsc`; `hz` its clock's rate)."""
    missing = []
    info = session_info(out_dir)
    stats = boundedio.read_json_or_none(out_dir / "stats.json", "trace statistics")
    if stats is None:
        stats = {}
        missing.append("the trace's ring-buffer statistics: lost kernel events are counted from the pages alone")
    if "window" not in info or not (out_dir / "symbols.txt").exists():
        if info.get("boot_id") not in (None, sysinfo.boot_id()):
            missing.append("kernel function names and thread names (the machine rebooted since)")
        if "stop_mono_ns" not in info:
            missing.append(f"the trace's stop marker: its window ends at {ended}")
        info = finish_capture(out_dir, info, stats, end_tsc=end_tsc, jobs=jobs)
    return missing + trace_gaps(info, ended, hz or info.get("tsc_hz"))
