"""Run the native selfish-detour probe and read what it recorded.

`Probe` starts `jitterscope-probe` (one pinned thread per CPU spinning on the
TSC, see native/probe.c), returns once every thread is looping, and collects
its per-CPU statistics at the end.  `read_detours` opens its binary output
(format in native/probe_records.h and probe_format.py) after checking it.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from jitterscope import boundedio
from jitterscope.errors import JitterscopeError
from jitterscope.measure import tsc
from jitterscope.measure.probe_format import DETOUR_DTYPE, FLAG_COMPLETE, HEADER_DTYPE, MAGIC, VERSION
from jitterscope.native_bin import PROBE_PROGRAM, native_bin
from jitterscope.native_child import NativeChild, last_line
from jitterscope.sysinfo import check_cpus

READY_TIMEOUT_S = 15.0


def _last_line(text: str) -> str:
    return last_line(text, PROBE_PROGRAM)


class _CpuStatsBase(TypedDict):
    iterations: int
    resolution_ns: float  # the loop's mean iteration outside detours: the smallest gap it can see
    loop_ns_min: float
    min_loop_cycles: int
    detours: int
    dropped: int
    detour_cycles: int
    first_tsc: int
    last_tsc: int
    tid: int  # the probe thread


class CpuStats(_CpuStatsBase, total=False):
    """One CPU's probe loop as its end line reports it."""

    estimated: bool  # rebuilt from the detours after the probe was killed (measure/recover.py)


class ProbeHeader(TypedDict):
    """A probe output's header (probe_format.HEADER_DTYPE), checked, and what the file holds."""

    version: int
    header_size: int
    record_size: int
    flags: int
    tsc_hz: int
    t0_tsc: int
    n_records: int
    dropped: int
    complete: bool  # the probe finished the file
    records_in_file: int  # whole records
    partial_bytes: int  # of a record cut short


@dataclass
class ProbeResult:
    """What the probe reported when it stopped; per_cpu is keyed by CPU number."""

    tsc_hz: float
    t0_tsc: int
    end_tsc: int
    per_cpu: dict[int, CpuStats]
    records: int = 0
    dropped: int = 0
    threshold_cycles: int = 0
    mlocked: bool = True
    warnings: list[str] = field(default_factory=list)


class Probe(NativeChild[ProbeResult]):
    """The native detour probe on `cpus`; a context manager (waits on exit; stops it
    first when untimed or on an exception).

    `start()` returns once every thread is pinned and looping, with `t0_tsc`,
    `pid` and `thread_comms` ({cpu: "js-probe/<cpu>"}) set.  The probe dies with
    the thread that started it (PR_SET_PDEATHSIG), so a killed parent leaves no
    probe spinning; start it from a thread that outlives the measurement.
    """

    WHAT = "probe"
    PROGRAM = PROBE_PROGRAM
    STOP_SIGNAL = signal.SIGINT  # the probe still finishes its file
    NO_END = "ended without reporting its statistics"

    def __init__(
        self,
        cpus: list[int],
        threshold_ns: float,
        out_path: Path,
        duration_ns: int | None = None,
        fifo_priority: int | None = None,
        end_path: Path | None = None,
        trace_off: Path | None = None,
    ) -> None:
        if not cpus:
            raise JitterscopeError("no CPUs to probe")
        if threshold_ns <= 0:
            raise JitterscopeError("probe threshold must be positive")
        if fifo_priority is not None and not 1 <= fifo_priority <= 99:
            raise JitterscopeError(f"SCHED_FIFO priority {fifo_priority} out of range 1-99")
        super().__init__()
        self.cpus = sorted(set(int(c) for c in cpus))
        self.threshold_ns = float(threshold_ns)
        self.out_path = Path(out_path)
        self.duration_ns = duration_ns
        self.fifo_priority = fifo_priority
        self.end_path = end_path  # the probe also writes its end line here (survives a killed parent)
        self.trace_off = trace_off  # a trace instance's tracing_on, which the probe clears if orphaned
        self.tsc_hz = 0.0
        self.threshold_cycles = 0
        self.t0_tsc = 0
        self.thread_comms: dict[int, str] = {}
        self.thread_tids: dict[int, int] = {}
        self.mlocked = True

    # -- lifecycle -------------------------------------------------------------
    def start(self, spawned: Callable[[], None] | None = None) -> Probe:
        """Start the probe; `spawned` runs once it is started, before it begins to measure."""
        check_cpus(self.cpus)
        self.tsc_hz = tsc.tsc_hz()
        self.threshold_cycles = max(1, round(tsc.to_ticks(self.threshold_ns, self.tsc_hz)))
        cmd = [
            str(native_bin(PROBE_PROGRAM)),
            "--cpus",
            ",".join(map(str, self.cpus)),
            "--threshold-cycles",
            str(self.threshold_cycles),
            "--out",
            str(self.out_path),
            "--tsc-hz",
            str(round(self.tsc_hz)),
        ]
        if self.duration_ns is not None:
            cmd += ["--duration-ns", str(int(self.duration_ns))]
        if self.fifo_priority is not None:
            cmd += ["--fifo", str(int(self.fifo_priority))]
        if self.end_path is not None:
            cmd += ["--end-file", str(self.end_path)]
        if self.trace_off is not None:
            cmd += ["--trace-off-if-orphaned", str(self.trace_off)]
        ready = self._launch(cmd, READY_TIMEOUT_S, spawned=spawned)
        self.t0_tsc = int(ready["t0_tsc"])
        self.mlocked = bool(ready["mlocked"])
        self.thread_comms = {int(t["cpu"]): str(t["comm"]) for t in ready["threads"]}
        self.thread_tids = {int(t["cpu"]): int(t["tid"]) for t in ready["threads"]}
        return self

    def _finish(self, end: dict[str, Any], err_text: str) -> ProbeResult:
        return result_from_end(end, self.tsc_hz, self.t0_tsc, self.mlocked, self._warnings(err_text))


def result_from_end(
    end: dict[str, Any], hz: float, t0_tsc: int, mlocked: bool = True, warnings: list[str] | None = None
) -> ProbeResult:
    """The probe's result from its end line (printed, or saved in its --end-file)."""
    per_cpu: dict[int, CpuStats] = {}
    for cpu_s, s in end["cpus"].items():
        it = int(s["iterations"])
        span = int(s["last_tsc"]) - int(s["first_tsc"])
        busy = max(0, span - int(s["detour_cycles"]))  # time the loop itself ran
        per_cpu[int(cpu_s)] = {
            "iterations": it,
            # Mean iteration time outside detours: the smallest gap the loop can see.
            "resolution_ns": tsc.to_ns(busy / it, hz) if it else 0.0,
            "loop_ns_min": tsc.to_ns(int(s["min_loop_cycles"]), hz),
            "min_loop_cycles": int(s["min_loop_cycles"]),
            "detours": int(s["detours"]),
            "dropped": int(s["dropped"]),
            "detour_cycles": int(s["detour_cycles"]),
            "first_tsc": int(s["first_tsc"]),
            "last_tsc": int(s["last_tsc"]),
            "tid": int(s.get("tid", 0)),  # the probe thread: the trace may show it under the binary's name
        }
    return ProbeResult(
        tsc_hz=hz,
        t0_tsc=int(t0_tsc),
        end_tsc=int(end["end_tsc"]),
        per_cpu=per_cpu,
        records=int(end["records"]),
        dropped=int(end["dropped"]),
        threshold_cycles=int(end["threshold_cycles"]),
        mlocked=mlocked,
        warnings=list(warnings or []),
    )


# -- reading the output ----------------------------------------------------------


def read_header(path: Path) -> ProbeHeader:
    """The checked file header as a dict (raises JitterscopeError if unusable)."""
    path = Path(path)
    size = boundedio.check_file(path, "probe output", boundedio.table_cap()).st_size
    if size < HEADER_DTYPE.itemsize:
        raise JitterscopeError(f"{path}: truncated probe output ({size} bytes, shorter than its header)")
    h = np.fromfile(path, dtype=HEADER_DTYPE, count=1)[0]
    if bytes(h["magic"]).ljust(8, b"\0") != MAGIC:
        raise JitterscopeError(f"{path}: not a jitterscope probe output (bad magic)")
    if int(h["version"]) != VERSION:
        raise JitterscopeError(f"{path}: probe output version {int(h['version'])}, this jitterscope reads {VERSION}")
    if int(h["header_size"]) != HEADER_DTYPE.itemsize or int(h["record_size"]) != DETOUR_DTYPE.itemsize:
        raise JitterscopeError(
            f"{path}: corrupt probe output (header {int(h['header_size'])} B, record {int(h['record_size'])} B)"
        )
    body = size - HEADER_DTYPE.itemsize
    return {
        "version": int(h["version"]),
        "header_size": int(h["header_size"]),
        "record_size": int(h["record_size"]),
        "flags": int(h["flags"]),
        "tsc_hz": int(h["tsc_hz"]),
        "t0_tsc": int(h["t0_tsc"]),
        "n_records": int(h["n_records"]),
        "dropped": int(h["dropped"]),
        "complete": bool(int(h["flags"]) & FLAG_COMPLETE),
        "records_in_file": body // DETOUR_DTYPE.itemsize,
        "partial_bytes": body % DETOUR_DTYPE.itemsize,
    }


def read_detours(path: Path, allow_incomplete: bool = False) -> np.ndarray:
    """The detour records as a structured array (memory-mapped, read-only).

    Fields: cpu, flags, start_tsc, duration_tsc (DETOUR_DTYPE), in the order the
    writer drained them.  A file the probe did not finish (killed), with a
    partial record, or whose record count disagrees with its header raises
    JitterscopeError; `allow_incomplete` accepts an unfinished file's whole records.
    """
    path = Path(path)
    h = read_header(path)
    n = int(h["records_in_file"])
    if h["complete"]:
        if h["partial_bytes"] or n != int(h["n_records"]):
            raise JitterscopeError(
                f"{path}: truncated or corrupt probe output: header says "
                f"{int(h['n_records'])} records, file holds {n}"
                f"{' and a partial one' if h['partial_bytes'] else ''}"
            )
    elif not allow_incomplete:
        raise JitterscopeError(f"{path}: probe output is incomplete (the probe was killed before finishing)")
    if n == 0:
        return np.zeros(0, dtype=DETOUR_DTYPE)
    return np.memmap(path, dtype=DETOUR_DTYPE, mode="r", offset=HEADER_DTYPE.itemsize, shape=(n,))
