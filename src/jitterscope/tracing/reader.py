"""The trace capture's reader (native/tracereader.c) and the ring size it needs.

One `jitterscope-tracereader` process reads every traced CPU: it sleeps in
epoll until a CPU's ring is `BUFFER_PERCENT` full, splices its full pages into
`trace/cpuN.raw`, and at stop drains the rest, partial page included.  It runs
off the probed CPUs and reports its own CPU time, which the session turns into
a cost per million kernel events (session.json's `reader`).

Ring size rule (`ring_kb`): the reader wakes when a ring is half full, so the
other half must hold what arrives until it has run: `HEADROOM_S` at the rate
the busiest traced CPU showed in the moments before tracing, `EVENT_BYTES` per
event.  That rate is its context switches (/proc/schedstat; without
CONFIG_SCHEDSTATS the whole machine's, /proc/stat's ctxt, an upper bound for
any one CPU) plus `EVENTS_PER_INTERRUPT` events per interrupt it took
(/proc/interrupts).  The user's `--buffer` is the least; the rings together
take at most `MEMORY_SHARE` of the available memory, and one at most `MOST_KB`.
"""

from __future__ import annotations

import json
import select
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from typing_extensions import TypedDict  # pydantic reads it back (tracing/session.reader_info)

from jitterscope.errors import JitterscopeError
from jitterscope.native_bin import TRACEREADER_PROGRAM, native_bin

BUFFER_PERCENT = 50  # the reader's wake-up watermark: the ring's share filled before it is read
HEADROOM_S = 0.25  # how long the unread half of a ring must last at the expected rate
EVENT_BYTES = 72  # a sched_switch record (64 B + its 4 B header), rounded up for time extends
EVENTS_PER_INTERRUPT = 4  # handler entry/exit, and the softirq or timer callback it raises
MEMORY_SHARE = 1 / 16
MOST_KB = 256 * 1024
SAMPLE_S = 0.05  # the least time between the two /proc readings of the rate
READY_TIMEOUT_S = 60.0  # a machine loaded 8 times over its CPUs took more than 10 s to start it
STOP_TIMEOUT_S = 60.0


# -- the rate before tracing, and the ring size from it ------------------------------------------------------


def _schedstat() -> dict[int, int]:
    """Per CPU: schedule() calls so far (/proc/schedstat, field 3 of each cpuN line)."""
    out: dict[int, int] = {}
    try:
        text = Path("/proc/schedstat").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("cpu") and parts[0][3:].isdigit() and len(parts) > 3:
            out[int(parts[0][3:])] = int(parts[3])
    return out


def _all_switches() -> int:
    """Context switches of the whole machine so far (/proc/stat ctxt)."""
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("ctxt "):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _interrupts() -> dict[int, int]:
    """Per CPU: interrupts handled so far (the columns of /proc/interrupts)."""
    out: dict[int, int] = {}
    try:
        lines = Path("/proc/interrupts").read_text().splitlines()
    except OSError:
        return out
    if not lines:
        return out
    cols = [int(h[3:]) for h in lines[0].split() if h.startswith("CPU") and h[3:].isdigit()]
    for line in lines[1:]:
        fields = line.split()[1 : 1 + len(cols)]
        for cpu, value in zip(cols, fields):
            if value.isdigit():
                out[cpu] = out.get(cpu, 0) + int(value)
    return out


@dataclass
class RateSample:
    """Kernel activity counters at one moment, to be turned into a rate by `events_per_s`."""

    t: float
    switches: dict[int, int]  # per CPU, empty without CONFIG_SCHEDSTATS
    all_switches: int
    interrupts: dict[int, int]

    @classmethod
    def now(cls) -> RateSample:
        return cls(time.monotonic(), _schedstat(), _all_switches(), _interrupts())

    def events_per_s(self, cpus: list[int]) -> float:
        """The busiest of `cpus`' expected trace events per second since this sample
        (waits until SAMPLE_S has passed)."""
        wait = SAMPLE_S - (time.monotonic() - self.t)
        if wait > 0:
            time.sleep(wait)
        later = RateSample.now()
        dt = max(later.t - self.t, 1e-3)
        best = 0.0
        for c in cpus:
            if self.switches:
                sw = later.switches.get(c, 0) - self.switches.get(c, 0)
            else:
                sw = later.all_switches - self.all_switches
            irq = later.interrupts.get(c, 0) - self.interrupts.get(c, 0)
            best = max(best, (max(sw, 0) + EVENTS_PER_INTERRUPT * max(irq, 0)) / dt)
        return best


def _available_kb() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def ring_kb(least_kb: int, events_per_s: float, ncpus: int) -> int:
    """Per-CPU ring size (KiB) by the rule in the module docstring."""
    need = events_per_s * EVENT_BYTES * HEADROOM_S / (1 - BUFFER_PERCENT / 100) / 1024
    avail = _available_kb()
    most = min(MOST_KB, avail * MEMORY_SHARE / max(ncpus, 1)) if avail else MOST_KB
    return int(max(least_kb, min(need, most)))


# -- the reader process ----------------------------------------------------------------------------------------


class ReaderSummary(TypedDict, total=False):
    """session.json's `reader` block: the reader's report, with its cost and density per kernel event (all
    of it written by ReaderReport.summary; an older capture's block may lack some)."""

    ended: str
    cpu_user_s: float
    cpu_sys_s: float
    full_pages: int
    partial_pages: int
    bytes: int
    wakeups: int
    idle_wakeups: int
    page_size: int
    priority: str
    affinity: list[int]
    cpu_s: float
    events: int
    cpu_s_per_m_events: float | None
    bytes_per_event: float | None


@dataclass
class ReaderReport:
    """What the reader says about itself when it ends (its reader.json)."""

    ended: str
    cpu_user_s: float
    cpu_sys_s: float
    full_pages: int
    partial_pages: int
    bytes: int
    wakeups: int
    idle_wakeups: int
    page_size: int
    priority: str
    affinity: list[int]

    @property
    def cpu_s(self) -> float:
        return self.cpu_user_s + self.cpu_sys_s

    def summary(self, events: int) -> ReaderSummary:
        """session.json's `reader` block: the report with its cost and density per kernel event."""
        return {
            "ended": self.ended,
            "cpu_user_s": self.cpu_user_s,
            "cpu_sys_s": self.cpu_sys_s,
            "full_pages": self.full_pages,
            "partial_pages": self.partial_pages,
            "bytes": self.bytes,
            "wakeups": self.wakeups,
            "idle_wakeups": self.idle_wakeups,
            "page_size": self.page_size,
            "priority": self.priority,
            "affinity": self.affinity,
            "cpu_s": round(self.cpu_s, 6),
            "events": events,
            "cpu_s_per_m_events": round(self.cpu_s / (events / 1e6), 6) if events else None,
            "bytes_per_event": round(self.bytes / events, 2) if events else None,
        }

    @classmethod
    def load(cls, path: Path) -> ReaderReport | None:
        try:
            data = json.loads(path.read_text())
            return cls(**{k: data[k] for k in cls.__dataclass_fields__})
        except (OSError, ValueError, KeyError, TypeError):
            return None


def _cpulist(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus) or "-"


class NativeReader:
    """The running `jitterscope-tracereader` of one instance; `stop()` ends it and returns its report."""

    def __init__(self, instance: Path, out_dir: Path, page_size: int, cpus: list[int], lock: Path) -> None:
        cmd = [
            str(native_bin(TRACEREADER_PROGRAM)),
            str(instance),
            str(out_dir),
            str(page_size),
            _cpulist(cpus),
            _cpulist(cpus),  # the traced CPUs are the probed ones: the reader keeps off them
            str(lock),
        ]
        self.out_dir = out_dir
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], READY_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            ended = self.proc.poll()
            self._kill()
            why = self._error() or (
                f"it ended with exit code {ended}" if ended is not None else f"no answer within {READY_TIMEOUT_S:.0f} s"
            )
            raise JitterscopeError(f"trace reader did not start: {why}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _error(self, err: bytes | None = None) -> str:
        if err is None:
            err = self.proc.stderr.read() if self.proc.stderr else b""
        lines = err.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else ""

    def _kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def stop(self) -> ReaderReport:
        """After tracing_on = 0: drain every CPU, wait for the reader's report."""
        try:
            out, err = self.proc.communicate(b"stop\n", timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._kill()
            raise JitterscopeError(f"trace reader did not finish within {STOP_TIMEOUT_S:.0f} s") from None
        if self.proc.returncode != 0:
            raise JitterscopeError(f"trace reader failed: {self._error(err) or f'exit code {self.proc.returncode}'}")
        report = ReaderReport.load(self.out_dir / "reader.json")
        if report is None:
            raise JitterscopeError(f"trace reader ended without its report ({out.decode(errors='replace')[:200]!r})")
        return report

    def abandon(self) -> None:
        """Teardown after a failure: end it now (its pages so far stay, whole)."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()  # EOF without "stop": it stops the instance and drains, then exits
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired):
                self._kill()
