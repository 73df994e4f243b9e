"""`pipeline run`: one run of a schedule, start to finish (the lifecycle measure uses).

check → create the run directory (graph.yaml, schedule.yaml, raw/plan.bin) →
kernel tracing if asked (private instance, journalled) → the native runtime
(pinned threads, heartbeat) → main loop (progress; Ctrl-C ends after the
iterations already started) → read the result → tables, attribution of late
iterations, summary.json, meta.json.  The raw result (raw/) is kept until the
tables are written, then removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jitterscope import budget, sysinfo
from jitterscope import session as lifecycle
from jitterscope.errors import JitterscopeError
from jitterscope.measure.tsc import tsc_hz
from jitterscope.pipeline import schedule as SF
from jitterscope.pipeline.build import build_run
from jitterscope.pipeline.compiler import Schedule
from jitterscope.pipeline.plan import RunOptions, build_plan, user_library
from jitterscope.pipeline.runtime import Runtime, heartbeat_done
from jitterscope.progress import Progress
from jitterscope.rundir import base_meta, create_run_dir, finish_later_on_interrupt, write_json
from jitterscope.tracing.tracefs import tracing_available

TIMERS_AUTO_LIMIT = 5_000_000  # sub-box x iteration records kept by default (80 MB in the runtime)


def timers_wanted(sched: Schedule, ro: RunOptions, asked: bool | None) -> bool:
    """--timers/--no-timers, else on when the per-sub-box records stay small."""
    if asked is not None:
        return asked
    return ro.iterations * len(sched.inst.subboxes) <= TIMERS_AUTO_LIMIT


def check_run(sched: Schedule, ro: RunOptions) -> list[str]:
    """Everything checked before anything is created; returns warnings."""

    sysinfo.check_cpus(list(ro.cpus))
    for b in sched.graph.boxes:
        if b.kernel == "user" and not user_library(sched.graph, b.spec).is_file():
            raise JitterscopeError(
                f"{sched.graph.source}: boxes.{b.name}.library: no such file "
                f"{user_library(sched.graph, b.spec)} (build the kernel first)"
            )
    warnings = []
    if sched.plan.pinned and len(sched.threads) > len(ro.cpus):
        warnings.append(
            f"{len(sched.threads)} threads on {len(ro.cpus)} CPUs: threads share CPUs, so the "
            f"schedule's timing is not what it was compiled for (waits sleep: --wait futex)"
        )
    if ro.wait == "spin" and len(sched.threads) > len(ro.cpus):
        raise JitterscopeError(
            f"--wait spin with {len(sched.threads)} threads on {len(ro.cpus)} CPUs would "
            f"livelock (a spinning thread holds the CPU its producer needs); use --wait hybrid"
        )
    if ro.priority and set(ro.cpus) >= set(sysinfo.online_cpus()) and ro.wait_mode(sched) == "spin":
        warnings.append(
            "SCHED_FIFO threads spinning on every online CPU leave the system only the RT "
            "throttling's 5%; consider leaving a CPU out of --cpus"
        )
    n_sub, n_sinks = len(sched.inst.subboxes), sum(1 for b in sched.graph.boxes if b.kernel == "sink")
    per_iter = 24 + 8 * n_sinks + 4 + (16 * n_sub if ro.timers else 0)
    table = ro.iterations * ((48 * n_sub if ro.timers else 0) + 48 + 24 * n_sinks)
    budget.check(
        f"{ro.iterations:,} iterations of {sched.graph.name}",
        bytes_=sched.memory.total + ro.iterations * per_iter + table,
        seconds=0,
        hint="use fewer --iterations or --no-timers",
    )
    return warnings


def run_pipeline(
    sched: Schedule,
    ro: RunOptions,
    out_dir: Path,
    trace: bool = False,
    buffer_kb: int = 4096,
    progress: bool = False,
    late_percentile: float = 99.0,
    command_line: list[str] | None = None,
) -> Path:

    warnings = check_run(sched, ro)
    for w in warnings:
        print(f"jitterscope: warning: {w}", file=sys.stderr)
    tracing_ok, reason = _tracing_state(trace)
    hz = tsc_hz()
    run_dir = create_run_dir(out_dir)
    raw = run_dir / "raw"
    try:
        raw.mkdir()
        (run_dir / "graph.yaml").write_text(sched.graph.text)
        SF.write(sched, run_dir / "schedule.yaml")
        (raw / "plan.bin").write_bytes(build_plan(sched, ro, hz))
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    meta = _meta(run_dir, sched, ro, hz, tracing_ok, reason, buffer_kb, command_line)
    write_json(raw / "meta.json", meta)  # kept with the raw result until the run is built
    try:
        end, own, interrupted, runtime = _acquire(sched, ro, run_dir, tracing_ok, buffer_kb, progress)
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)  # nothing was recorded
        raise
    meta.update(
        interrupted=interrupted,
        t0_tsc=runtime.t0_tsc,
        mlocked=runtime.mlocked,
        threads=runtime.threads,
        warnings=warnings + end.warnings,
        first_violation=end.first_violation,
        hung=end.hung,
    )
    with finish_later_on_interrupt(run_dir):
        build_run(run_dir, meta, sched, run_dir / "trace" if tracing_ok else None, own, late_percentile)
    if end.hung:
        hang = next((w for w in end.warnings if w.startswith("hang:")), "hang")
        raise JitterscopeError(
            f"the pipeline stopped: {hang}; the iterations before it are in {run_dir} "
            f"(a longer --hang-timeout if it was only slow)",
            exit_code=1,
        )
    return run_dir


def _tracing_state(trace: bool) -> tuple[bool, str | None]:
    if not trace:
        return False, "not asked for (--trace)"

    return tracing_available()


def _meta(
    run_dir: Path,
    sched: Schedule,
    ro: RunOptions,
    hz: float,
    tracing_ok: bool,
    reason: str | None,
    buffer_kb: int,
    command_line: list[str] | None,
) -> dict[str, Any]:
    g = sched.graph
    return base_meta(
        kind="pipeline",
        id=run_dir.name,
        host=sysinfo.host(),
        kernel=sysinfo.kernel(),
        command_line=command_line if command_line is not None else list(sys.argv),
        start=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        start_unix_ns=time.time_ns(),
        cpus=list(ro.cpus),
        cpu_model=sysinfo.cpu_model(),
        clocksource=sysinfo.clocksource(),
        virtualization=sysinfo.virtualization(),
        tsc_hz=hz,
        duration_s=0.0,
        options={
            "iterations": ro.iterations,
            "seed": ro.seed,
            "wait": ro.wait_mode(sched),
            "priority": ro.priority,
            "mlock": ro.mlock,
            "hugepages": ro.hugepages,
            "guard": ro.guard,
            "timers": ro.timers,
            "period_ns": ro.period_ns,
            **sched.options.as_dict(),
        },
        graph={
            "name": g.name,
            "digest": g.digest(),
            "file": str(g.path) if g.path else None,
            "width": g.width,
            "height": g.height,
            "pixel": g.pixel,
            "boxes": len(g.boxes),
            "buffers": len(g.buffers),
        },
        schedule={
            "heuristic": sched.options.heuristic,
            "memory": sched.memory.allocator,
            "threads": len(sched.threads),
            "subboxes": len(sched.inst.subboxes),
            "signals": len(sched.signals),
            "pool_bytes": sched.memory.total,
        },
        tracing={
            "enabled": tracing_ok,
            "reason": reason,
            "clock": "x86-tsc" if tracing_ok else None,
            "buffer_kb": buffer_kb if tracing_ok else None,
        },
    )


def _acquire(
    sched: Schedule, ro: RunOptions, run_dir: Path, tracing_ok: bool, buffer_kb: int, progress: bool
) -> tuple[Any, set[int], bool, Any]:

    raw = run_dir / "raw"
    interrupted = False
    with lifecycle.guard("pipeline") as journal, contextlib.ExitStack() as stack:
        if tracing_ok:
            from jitterscope.tracing.session import TraceSession

            (run_dir / "trace").mkdir()
            stack.enter_context(TraceSession(list(ro.cpus), run_dir / "trace", journal, buffer_kb=buffer_kb))
        rt = Runtime(
            raw / "plan.bin", raw / "result.bin", raw / "heartbeat.bin", exit_timeout_s=max(60.0, 3 * ro.hang_s)
        )
        rt.start()
        bar = Progress("running", ro.iterations, enabled=progress)
        try:
            while rt.running():
                bar.update(heartbeat_done(raw / "heartbeat.bin"))
                time.sleep(0.1)
        except KeyboardInterrupt:
            interrupted = True
            bar.close("interrupted: finishing the iterations already started")
            rt.stop()
        finally:
            own = sysinfo.thread_ids(os.getpid()) | sysinfo.thread_ids(rt.pid)
            end = rt.wait(timeout=rt.exit_timeout())
        bar.close()
    return end, own, interrupted or end.interrupted, rt
