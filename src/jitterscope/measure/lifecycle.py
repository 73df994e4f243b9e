"""One measurement, start to finish, through the session lifecycle (session.py).

parse → check → create the run directory → the session: journal and watchdog,
measure's steps (measure/steps.py: a private trace instance the session owns,
the probe, the main loop, stop, the raw capture written) → analyse
(attribution, summary) → write.  `measure` is also the library entry point for
`monitor` and `cluster`; `doe` runs `jitterscope measure` in a subprocess
(doe/response.py).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jitterscope import budget, outpath, sysinfo
from jitterscope import session as lifecycle
from jitterscope.errors import JitterscopeError
from jitterscope.humanize import seconds
from jitterscope.measure import capture, peers
from jitterscope.measure.steps import MeasureSteps
from jitterscope.rundir import base_meta, create_run_dir, new_run_path
from jitterscope.tracing.tracefs import tracing_available


@dataclass
class MeasureOptions:
    cpus: list[int]
    duration_ns: float
    threshold_ns: float = 1000.0
    priority: int | None = None
    trace: bool = True
    buffer_kb: int = 4096
    report: bool = True
    progress: bool = False
    command_line: list[str] = field(default_factory=lambda: list(sys.argv))
    note: str | None = None  # shown on stderr once the run has started


def measure(
    cpus: list[int],
    duration_ns: float,
    threshold_ns: float,
    out_dir: Path | None = None,
    trace: bool = True,
    priority: int | None = None,
    report: bool = False,
    progress: bool = False,
    buffer_kb: int = 4096,
    on_tick: Callable[[float], None] | None = None,
    before_probe: Callable[[], None] | None = None,
    kept_as: Path | None = None,
) -> Path:
    """Measure and write a complete run directory; return its path.

    `before_probe` runs after tracing is set up, just before the probe starts
    (cluster measure synchronizes the ranks there).  `kept_as` is where the
    caller keeps the raw capture if this fails (errors name it instead of out_dir)."""
    opts = MeasureOptions(
        cpus=cpus,
        duration_ns=duration_ns,
        threshold_ns=threshold_ns,
        priority=priority,
        trace=trace,
        report=report,
        progress=progress,
        buffer_kb=buffer_kb,
    )
    return run_measurement(opts, out_dir or new_run_path(), on_tick, before_probe, kept_as)


def validate(opts: MeasureOptions, out_dir: Path | None = None) -> None:
    """Check everything the user gave before anything is changed or created."""
    if out_dir is not None:
        parent = out_dir.parent if str(out_dir.parent) else Path(".")
        if out_dir.exists():
            raise JitterscopeError(f"{out_dir}: already exists; choose a new --out directory")
        if parent.exists() and not os.access(parent, os.W_OK):
            raise JitterscopeError(f"{parent}: not writable; choose another --out directory")
    if not opts.cpus:
        raise JitterscopeError("no CPUs to measure")
    sysinfo.check_cpus(opts.cpus)
    if opts.threshold_ns < 1:
        raise JitterscopeError("--threshold must be at least 1ns")
    if opts.priority is not None and not 1 <= opts.priority <= 99:
        raise JitterscopeError(f"SCHED_FIFO priority {opts.priority} out of range 1-99")
    # A missing parent is refused where the directory is made (outpath: never created for you, but for the
    # default root), with that reason rather than the free space of some directory further up.
    if out_dir is not None and (out_dir.parent.exists() or out_dir.parent.name in outpath.DEFAULT_ROOTS):
        budget.check_disk(
            f"measuring {len(opts.cpus)} CPU{'s' if len(opts.cpus) > 1 else ''} for {seconds(opts.duration_ns / 1e9)}"
            f"{' with tracing' if opts.trace else ''}",
            capture_bytes(opts.duration_ns / 1e9, len(opts.cpus), opts.trace),
            out_dir,
            "measure fewer CPUs, a shorter --duration, or write --out to a bigger disk",
        )


# What a run directory takes per measured CPU and second, measured on the busy 2-vCPU KVM guest
# this was written on.  The probe's detours: one 24-byte record each, 13-18 k a second at the 1 us
# threshold there (VM exits), 340-425 KiB/s.  The trace and the tables built from it: a 2 s run of one
# CPU wrote trace/cpu1.raw 2.0 MB for 56,653 kernel events (36 bytes each) and 0.43 MB of tables.  A CPU
# in an event storm writes far more (issue 24: up to 200 MB/s today), so this refuses only plans that
# cannot fit even at a busy machine's ordinary rate.
DETOUR_BYTES_PER_CPU_S = 512 * 2**10
TRACE_BYTES_PER_CPU_S = 1.25 * 2**20


def capture_bytes(duration_s: float, ncpus: int, trace: bool) -> float:
    """The estimated size of a run directory (raw capture and tables) of this plan."""
    return duration_s * ncpus * (DETOUR_BYTES_PER_CPU_S + (TRACE_BYTES_PER_CPU_S if trace else 0))


def run_measurement(
    opts: MeasureOptions,
    out_dir: Path,
    on_tick: Callable[[float], None] | None = None,
    before_probe: Callable[[], None] | None = None,
    kept_as: Path | None = None,
) -> Path:
    """The lifecycle.  Raw data is written first (measure/capture.py): once the probe
    has started, no failure deletes the run directory; the error says how to finish it."""
    validate(opts, out_dir)
    tracing_ok, reason = _tracing_state(opts)
    run_dir = create_run_dir(out_dir)
    if opts.note:
        print(opts.note, file=sys.stderr)
    shared = peers.warning(opts.cpus)
    if shared:
        print(shared, file=sys.stderr)
    throttle = sysinfo.rt_throttle_us() if opts.priority is not None else None
    if throttle:
        runtime, period = throttle
        print(
            f"jitterscope: warning: real-time throttling (kernel.sched_rt_runtime_us={runtime} of {period}) stops "
            f"the SCHED_FIFO probe for {(period - runtime) / 1000:g} ms every {period / 1e6:g} s; that time shows as "
            f"swapper/N or whatever ran.  Set kernel.sched_rt_runtime_us=-1 to measure without it.",
            file=sys.stderr,
        )
    elif opts.priority is not None and sysinfo.fair_server():  # throttling off, yet not free of ordinary tasks
        print(
            "jitterscope: note: since Linux 6.12 the fair server runs ordinary tasks waiting on a CPU that "
            "real-time tasks keep busy for up to 50 ms a second, whatever sched_rt_runtime_us says: they show "
            "as noise on the probed CPUs (keep other tasks off them, e.g. with a cpuset).",
            file=sys.stderr,
        )
    start = datetime.now(timezone.utc)
    meta: dict[str, Any] = base_meta(
        kind="measure",
        id=run_dir.name,
        host=sysinfo.host(),
        kernel=sysinfo.kernel(),
        command_line=opts.command_line,
        start=start.isoformat(timespec="seconds"),
        start_unix_ns=time.time_ns(),
        cpus=opts.cpus,
        cpu_model=sysinfo.cpu_model(),
        clocksource=sysinfo.clocksource(),
        virtualization=sysinfo.virtualization(),
        options={
            "duration_ns": opts.duration_ns,
            "threshold_ns": opts.threshold_ns,
            "priority": opts.priority,
            "trace": opts.trace,
            "buffer_kb": opts.buffer_kb,
        },
        tracing={
            "enabled": tracing_ok,
            "reason": reason,
            "clock": "x86-tsc" if tracing_ok else None,
            "buffer_kb": opts.buffer_kb if tracing_ok else None,
        },
    )
    steps = MeasureSteps(opts, run_dir, meta, tracing_ok, on_tick, before_probe)
    try:
        lifecycle.run(steps, run_dir)
    except BaseException as err:  # noqa: BLE001 - any failure once the probe started keeps the raw capture, and says so
        if not run_dir.exists():  # the session removed it: nothing was measured
            raise
        raise capture.kept(run_dir, err, steps.doing, kept_as) from None
    if opts.report:
        write_report_or_warn(run_dir)
    return run_dir


def _tracing_state(opts: MeasureOptions) -> tuple[bool, str | None]:
    if not opts.trace:
        return False, "disabled with --no-trace"
    return tracing_available()


def write_report_or_warn(run_dir: Path) -> None:
    try:  # lazy: the report draws with matplotlib (~0.3 s), which --no-report never needs
        from jitterscope.report.pages import write_report
    except ImportError as err:
        print(f"jitterscope: warning: report not written: {err}", file=sys.stderr)
        return
    try:
        write_report(run_dir)
    except (JitterscopeError, OSError) as err:  # the run itself is complete: say so, do not fail it
        print(f"jitterscope: warning: report not written: {err}", file=sys.stderr)
