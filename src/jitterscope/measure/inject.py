"""The noise injector: a synthetic daemon with known period and busy time.

`Injector` runs `jitterscope-inject` (native/inject.c) and `read_truth` loads
the busy intervals it wrote, in the probe's clock (TSC), so tests and users can
check what the probe and the attribution found against what truly happened.

Truth file format (CSV, one comment line, one header line, one row per wake-up;
the comment line is shown here wrapped after busy_ns):

    # jitterscope-inject truth v1 tsc_hz=2599998123.601 pid=4242 cpu=1 period_ns=50000000 busy_ns=2000000
      name=jitterscope-inj policy=fifo
    start_tsc,end_tsc
    22335973937051,22335979137061

`start_tsc`/`end_tsc` are TSC values read (fenced rdtsc) right after the wake-up
and at the end of the busy loop.  Under SCHED_FIFO the interval is contiguous
CPU time; under SCHED_OTHER it may include time the injector was preempted.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from jitterscope import boundedio, journal
from jitterscope.errors import JitterscopeError
from jitterscope.measure import tsc
from jitterscope.native_bin import INJECT_PROGRAM, native_bin
from jitterscope.native_child import NativeChild
from jitterscope.sysinfo import check_cpus
from jitterscope.units import DURATION_BOUNDS, format_ns, format_s

DEFAULT_NAME = "jitterscope-inj"
DEFAULT_PRIORITY = 50
POLICIES = ("auto", "fifo", "other")


class TruthHeader(TypedDict, total=False):
    """A truth file's first line: `key=value` after the format name."""

    tsc_hz: float
    pid: int
    cpu: int
    period_ns: int
    busy_ns: int
    name: str
    policy: str


class PeriodStats(TypedDict):
    """Measured period and busy time, ns (period_stats)."""

    period_mean_ns: float
    period_overall_ns: float
    period_p99_dev_ns: float
    period_max_dev_ns: float
    busy_mean_ns: float
    busy_max_ns: float
    busy_total_ns: float


class Injected(TypedDict):
    """What `jitterscope inject` did (`--json` prints it)."""

    cpu: int
    name: str
    pid: int
    policy: str
    priority: int
    period_ns: int
    busy_ns: int
    wakeups: int
    missed_deadlines: int
    interrupted: bool
    tsc_hz: float
    truth: str | None  # the truth file kept, if one was asked for
    measured: PeriodStats | None  # None: fewer than two wake-ups


@dataclass
class Truth:
    """Busy intervals from a truth file; `truth["start_tsc"]` works like a table."""

    start_tsc: np.ndarray
    end_tsc: np.ndarray
    meta: TruthHeader = field(default_factory=lambda: TruthHeader())

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in ("start_tsc", "end_tsc"):
            raise KeyError(key)
        return getattr(self, key)

    def __len__(self) -> int:
        return len(self.start_tsc)

    @property
    def tsc_hz(self) -> float:
        return float(self.meta["tsc_hz"])


def read_truth(path: Path) -> Truth:
    """Load an injector truth file (format in this module's docstring)."""
    path = Path(path)
    lines = boundedio.read_text(path, "truth file", boundedio.table_cap()).splitlines()
    if (
        len(lines) < 2
        or not lines[0].startswith("# jitterscope-inject truth v1")
        or lines[1].strip() != "start_tsc,end_tsc"
    ):
        raise JitterscopeError(f"{path}: not a jitterscope-inject truth file")
    raw = dict(item.partition("=")[::2] for item in lines[0].split()[4:])
    meta: TruthHeader = {}
    try:
        if "tsc_hz" in raw:
            meta["tsc_hz"] = float(raw["tsc_hz"])
        if "pid" in raw:
            meta["pid"] = int(raw["pid"])
        if "cpu" in raw:
            meta["cpu"] = int(raw["cpu"])
        if "period_ns" in raw:
            meta["period_ns"] = int(raw["period_ns"])
        if "busy_ns" in raw:
            meta["busy_ns"] = int(raw["busy_ns"])
    except ValueError:
        raise JitterscopeError(f"{path}: malformed header in truth file") from None
    if "name" in raw:
        meta["name"] = raw["name"]
    if "policy" in raw:
        meta["policy"] = raw["policy"]
    rows = [ln for ln in lines[2:] if ln.strip()]
    try:
        data = np.array([[int(x) for x in ln.split(",")] for ln in rows], dtype=np.int64).reshape(-1, 2)
    except ValueError:
        raise JitterscopeError(f"{path}: malformed row in truth file") from None
    return Truth(start_tsc=data[:, 0].copy(), end_tsc=data[:, 1].copy(), meta=meta)


@dataclass
class InjectResult:
    wakeups: int
    missed: int
    interrupted: bool
    policy: str
    priority: int
    tsc_hz: float
    warnings: list[str]


class Injector(NativeChild[InjectResult]):
    """The native injector on one CPU; a context manager.

    On leaving the block it waits for a timed injector to finish its duration
    (or stops it at once on an exception, or when untimed).  It dies with the
    thread that started it (PR_SET_PDEATHSIG) and never outlives its duration.
    """

    WHAT = "injector"
    PROGRAM = INJECT_PROGRAM
    STOP_SIGNAL = signal.SIGTERM

    def __init__(
        self,
        cpu: int,
        period_ns: float,
        busy_ns: float,
        duration_ns: float | None = None,
        name: str = DEFAULT_NAME,
        policy: str = "auto",
        truth_path: Path | None = None,
        priority: int = DEFAULT_PRIORITY,
    ) -> None:
        validate(cpu, period_ns, busy_ns, duration_ns, name, policy, priority)
        super().__init__()
        self.cpu = int(cpu)
        self.period_ns = int(period_ns)
        self.busy_ns = int(busy_ns)
        self.duration_ns = None if duration_ns is None else int(duration_ns)
        self.name = name
        self.policy = policy
        self.priority = priority
        self.truth_path = None if truth_path is None else Path(truth_path)
        self.used_policy = ""
        self._priority = 0  # what it got (from its ready line)
        self._tsc_hz = 0.0

    def start(self) -> Injector:
        cmd = [
            str(native_bin(INJECT_PROGRAM)),
            "--cpu",
            str(self.cpu),
            "--period-ns",
            str(self.period_ns),
            "--busy-ns",
            str(self.busy_ns),
            "--name",
            self.name,
            "--policy",
            self.policy,
            "--priority",
            str(self.priority),
            "--tsc-hz",
            str(round(tsc.tsc_hz())),
        ]
        if self.duration_ns is not None:
            cmd += ["--duration-ns", str(self.duration_ns)]
        if self.truth_path is not None:
            cmd += ["--truth", str(self.truth_path)]
        ready = self._launch(cmd, 10.0)
        self.used_policy = str(ready["policy"])
        self._priority, self._tsc_hz = int(ready.get("priority", 0)), float(ready["tsc_hz"])
        return self

    def exit_timeout(self) -> float | None:
        # A timed injector is left to finish its duration.
        return None if self.duration_ns is None else self.duration_ns / 1e9 + 30

    def _finish(self, end: dict[str, Any], err_text: str) -> InjectResult:
        return InjectResult(
            wakeups=int(end["wakeups"]),
            missed=int(end["missed"]),
            interrupted=bool(end["interrupted"]),
            policy=self.used_policy,
            priority=self._priority,
            tsc_hz=self._tsc_hz,
            warnings=self._warnings(err_text),
        )


def validate(
    cpu: int, period_ns: float, busy_ns: float, duration_ns: float | None, name: str, policy: str, priority: int
) -> None:
    """One-line errors for every bad input, before anything starts."""
    check_cpus([int(cpu)])
    lo_s, hi_s = DURATION_BOUNDS["--period"]  # the bound the option itself is parsed with
    if not lo_s * 1e9 <= period_ns <= hi_s * 1e9:
        raise JitterscopeError(
            f"period {format_ns(period_ns)} is out of range: use {format_s(lo_s)} to {format_s(hi_s)}"
        )
    if busy_ns <= 0:
        raise JitterscopeError("busy time must be positive")
    if busy_ns >= period_ns:
        raise JitterscopeError(f"busy time ({busy_ns:.0f} ns) must be shorter than the period ({period_ns:.0f} ns)")
    if duration_ns is not None and duration_ns < period_ns:
        raise JitterscopeError("duration must be at least one period")
    if not name or len(name.encode(errors="surrogateescape")) > 15 or "/" in name or any(ch.isspace() for ch in name):
        raise JitterscopeError(f"name {name!r} must be 1-15 bytes without spaces or '/' (the kernel's task name)")
    if name.encode(errors="surrogateescape") != name.encode(errors="replace"):
        raise JitterscopeError(f"name {name!r} is not valid UTF-8 (the truth file and the run record it as text)")
    if policy not in POLICIES:
        raise JitterscopeError(f"policy {policy!r}: use fifo or other")
    if not 1 <= priority <= 99:
        raise JitterscopeError(f"SCHED_FIFO priority {priority} out of range 1-99")


def period_stats(truth: Truth) -> PeriodStats:
    """Measured period and busy time from a truth file, in ns."""
    hz = truth.tsc_hz
    if len(truth) < 2:
        raise JitterscopeError("too few wake-ups to measure a period")
    starts = truth.start_tsc.astype(np.float64)
    periods = tsc.to_ns(np.diff(starts), hz)
    busy = tsc.to_ns(truth.end_tsc - truth.start_tsc, hz)
    nominal = float(truth.meta.get("period_ns", np.median(periods)))
    # Overall rate from the first to the last wake-up: the absolute deadlines
    # make this the nominal period exactly, whatever each wake-up's latency.
    span_ns = tsc.to_ns(float(starts[-1] - starts[0]), hz)
    slots = np.round(span_ns / nominal)
    return {
        "period_mean_ns": float(periods.mean()),
        "period_overall_ns": float(span_ns / slots) if slots else float("nan"),
        "period_p99_dev_ns": float(np.percentile(np.abs(periods - nominal), 99)),
        "period_max_dev_ns": float(np.abs(periods - nominal).max()),
        "busy_mean_ns": float(busy.mean()),
        "busy_max_ns": float(busy.max()),
        "busy_total_ns": float(busy.sum()),
    }


def inject(
    cpu: int,
    period_ns: float,
    busy_ns: float,
    duration_ns: float | None,
    name: str,
    policy: str,
    priority: int,
    truth_path: Path | None,
    on_start: Callable[[Injector], None] | None = None,
) -> Injected:
    """Run the injector until its duration is over (or Ctrl-C) and return what it did, measured from
    its truth file (a private, journalled one when `truth_path` is None).  `on_start` is called once
    it runs (to say so)."""
    with contextlib.ExitStack() as stack:
        path = truth_path
        if path is None:  # statistics come from the truth file: a private one, journalled
            path = stack.enter_context(journal.scratch("jitterscope-inject-")) / "truth.csv"
        inj = Injector(
            cpu, period_ns, busy_ns, duration_ns, name=name, policy=policy, truth_path=path, priority=priority
        )
        inj.start()
        if on_start is not None:
            on_start(inj)
        try:
            result = inj.wait()
        except KeyboardInterrupt:
            inj.stop()
            result = inj.wait(timeout=10)
        for w in result.warnings:
            print(f"jitterscope: warning: {w}", file=sys.stderr)
        truth = read_truth(path)
        return {
            "cpu": cpu,
            "name": name,
            "pid": inj.pid,
            "policy": inj.used_policy,
            "priority": result.priority,
            "period_ns": int(period_ns),
            "busy_ns": int(busy_ns),
            "wakeups": result.wakeups,
            "missed_deadlines": result.missed,
            "interrupted": result.interrupted,
            "tsc_hz": result.tsc_hz,
            "truth": str(truth_path) if truth_path else None,
            "measured": period_stats(truth) if len(truth) >= 2 else None,
        }
