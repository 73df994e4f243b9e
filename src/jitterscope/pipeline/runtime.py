"""Run the native pipeline runtime on a plan and read what it recorded.

`Runtime` starts `jitterscope-pipeline` (native/pipeline.c) as a `NativeChild`:
it returns once every thread is placed, with `t0_tsc` and the threads' ids and
names (`js-pipe/<t>`, what the trace attribution recognises as the pipeline's
own time).  While it runs, the heartbeat file (a js_heartbeat page it keeps
current) gives the iterations completed and the latest latencies: the progress
bar reads it, and so can another program (e.g. `protect`'s critical-program
monitor: see docs/commands/pipeline.md).  `read_result` checks the result
file and returns its arrays.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from jitterscope import boundedio
from jitterscope.errors import JitterscopeError
from jitterscope.native_bin import native_bin
from jitterscope.native_child import NativeChild
from jitterscope.pipeline import plan_format as F

PROGRAM = "jitterscope-pipeline"
THREAD_COMM_PREFIX = "js-pipe/"
READY_TIMEOUT_S = 60.0


@dataclass
class RuntimeEnd:
    iterations: int
    interrupted: bool
    guard_violations: int
    first_violation: str
    end_tsc: int
    warnings: list[str] = field(default_factory=list)
    hung: bool = False  # the watchdog stopped it (the hang line is among the warnings)


class WorkerThread(TypedDict):
    """One worker thread in the runtime's ready line (native/pipeline.c)."""

    thread: int
    tid: int
    cpu: int
    comm: str


class ResultHeader(TypedDict):
    """result.bin's header (plan_format.RESULT_HEADER) without its magic and padding."""

    version: int
    header_size: int
    iter_size: int
    timer_size: int
    flags: int
    n_subboxes: int
    n_sinks: int
    n_threads: int
    tsc_hz: int
    t0_tsc: int
    iterations_requested: int
    iterations_done: int
    guard_violations: int


class Runtime(NativeChild[RuntimeEnd]):
    WHAT = "pipeline runtime"
    PROGRAM = PROGRAM
    STOP_SIGNAL = signal.SIGINT  # it finishes the iterations already started and writes its file
    NO_END = "ended without reporting"

    def __init__(self, plan: Path, out: Path, heartbeat: Path | None = None, exit_timeout_s: float = 60.0) -> None:
        super().__init__()
        self.plan, self.out, self.heartbeat = plan, out, heartbeat
        self._exit_timeout = exit_timeout_s
        self.duration_ns = 0  # it ends by itself after its iterations: leaving the block waits, not stops
        self.t0_tsc = 0
        self.mlocked = False
        self.threads: list[WorkerThread] = []

    def exit_timeout(self) -> float | None:
        return self._exit_timeout

    def start(self) -> Runtime:
        cmd = [str(native_bin(PROGRAM)), "--plan", str(self.plan), "--out", str(self.out)]
        if self.heartbeat is not None:
            cmd += ["--heartbeat", str(self.heartbeat)]
        ready = self._launch(cmd, READY_TIMEOUT_S)
        self.t0_tsc = int(ready["t0_tsc"])
        self.mlocked = bool(ready["mlocked"])
        self.threads = [
            {"thread": int(t["thread"]), "tid": int(t["tid"]), "cpu": int(t["cpu"]), "comm": str(t["comm"])}
            for t in ready["threads"]
        ]
        return self

    def _finish(self, end: dict[str, Any], err_text: str) -> RuntimeEnd:
        return RuntimeEnd(
            int(end["iterations"]),
            bool(end["interrupted"]),
            int(end["guard_violations"]),
            str(end["first_violation"]),
            int(end["end_tsc"]),
            self._warnings(err_text),
            bool(end.get("hung")),
        )


def heartbeat_done(path: Path) -> int:
    """Iterations the runtime has completed so far (0 before it has written its heartbeat)."""
    try:
        h = np.memmap(path, dtype=F.HEARTBEAT, mode="r", shape=(1,))[0]
    except (OSError, ValueError):
        return 0
    return int(h["done"]) if bytes(h["magic"]) == F.HEARTBEAT_MAGIC.rstrip(b"\0") else 0


@dataclass
class Result:
    header: ResultHeader
    iters: np.ndarray  # RESULT_ITER per completed iteration
    digests: np.ndarray  # uint64 [iterations, sinks]
    timers: np.ndarray | None  # RESULT_TIMER [iterations, sub-boxes]


def result_written(path: Path) -> bool:
    """The runtime finished its result file (the header's complete flag, which it sets last)."""
    try:
        with open(path, "rb") as f:
            data = f.read(F.RESULT_HEADER.itemsize)
    except OSError:
        return False
    if len(data) < F.RESULT_HEADER.itemsize:
        return False
    return bool(int(np.frombuffer(data, F.RESULT_HEADER, count=1)[0]["flags"]) & F.RESULT_COMPLETE)


def read_result(path: Path) -> Result:
    """The runtime's result file, checked (one-line error if unusable)."""
    data = boundedio.read_bytes(path, "pipeline result", boundedio.table_cap())
    hd = F.RESULT_HEADER
    if len(data) < hd.itemsize:
        raise JitterscopeError(f"{path}: truncated pipeline result")
    h = np.frombuffer(data, hd, count=1)[0]
    if bytes(h["magic"]).ljust(8, b"\0") != F.RESULT_MAGIC or int(h["version"]) != F.VERSION:
        raise JitterscopeError(f"{path}: not a pipeline result of this version")
    if not int(h["flags"]) & F.RESULT_COMPLETE:
        raise JitterscopeError(f"{path}: the pipeline result is incomplete (the runtime was killed)")
    n, sinks, subs = int(h["iterations_done"]), int(h["n_sinks"]), int(h["n_subboxes"])
    timers = bool(int(h["flags"]) & F.RESULT_TIMERS)
    off = hd.itemsize
    want = off + n * F.RESULT_ITER.itemsize + n * sinks * 8 + (n * subs * F.RESULT_TIMER.itemsize if timers else 0)
    if len(data) != want:
        raise JitterscopeError(f"{path}: corrupt pipeline result ({len(data)} bytes, expected {want})")
    iters = np.frombuffer(data, F.RESULT_ITER, count=n, offset=off)
    off += n * F.RESULT_ITER.itemsize
    digests = np.frombuffer(data, "<u8", count=n * sinks, offset=off).reshape(n, sinks)
    off += n * sinks * 8
    tm = np.frombuffer(data, F.RESULT_TIMER, count=n * subs, offset=off).reshape(n, subs) if timers else None
    header: ResultHeader = {
        "version": int(h["version"]),
        "header_size": int(h["header_size"]),
        "iter_size": int(h["iter_size"]),
        "timer_size": int(h["timer_size"]),
        "flags": int(h["flags"]),
        "n_subboxes": subs,
        "n_sinks": sinks,
        "n_threads": int(h["n_threads"]),
        "tsc_hz": int(h["tsc_hz"]),
        "t0_tsc": int(h["t0_tsc"]),
        "iterations_requested": int(h["iterations_requested"]),
        "iterations_done": n,
        "guard_violations": int(h["guard_violations"]),
    }
    return Result(header, iters, digests, tm)
