"""`pipeline run`: one run of a schedule, start to finish, through the session lifecycle (session.py).

check → create the run directory (meta.json marked incomplete) → graph.yaml, schedule.yaml,
raw/plan.bin → kernel tracing if asked (the session's, journalled) → the native runtime (pinned
threads, heartbeat) → main loop (progress; Ctrl-C ends after the iterations already started) →
the runtime's raw/result.bin, fsynced → tables, attribution of late iterations, summary.json,
meta.json complete.  The raw result (raw/) is kept until the run is built, then removed; a run cut
short before that is finished by `jitterscope analyze` (build.rebuild).
"""

from __future__ import annotations

import os
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
from jitterscope.pipeline.results import Summary
from jitterscope.pipeline.runtime import Runtime, RuntimeEnd, heartbeat_done, result_written
from jitterscope.progress import Progress
from jitterscope.rundir import SESSION_MARKS, base_meta, create_run_dir
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
    """One run through the session lifecycle (session.py); the run directory."""
    warnings = check_run(sched, ro)
    for w in warnings:
        print(f"jitterscope: warning: {w}", file=sys.stderr)
    tracing_ok, reason = _tracing_state(trace)
    hz = tsc_hz()
    run_dir = create_run_dir(out_dir)
    meta = _meta(run_dir, sched, ro, hz, tracing_ok, reason, buffer_kb, command_line)
    meta["warnings"] = warnings
    steps = PipelineSteps(sched, ro, run_dir, meta, progress, late_percentile)
    s, _ = lifecycle.run(steps, run_dir)
    if s.failed:
        raise JitterscopeError(f"{s.failed}; the iterations before it are in {run_dir}", exit_code=1)
    if steps.end is not None and steps.end.hung:
        hang = next((w for w in steps.end.warnings if w.startswith("hang:")), "hang")
        raise JitterscopeError(
            f"the pipeline stopped: {hang}; the iterations before it are in {run_dir} "
            f"(a longer --hang-timeout if it was only slow)",
            exit_code=1,
        )
    return run_dir


class PipelineSteps:
    """`pipeline run`'s steps of the session lifecycle.  The raw run is graph.yaml, schedule.yaml,
    raw/plan.bin and meta.json (written before the runtime starts), then raw/result.bin, which the
    runtime writes as it ends, also when jitterscope is killed (it ends with its parent)."""

    kind = "pipeline"

    def __init__(
        self, sched: Schedule, ro: RunOptions, run_dir: Path, meta: dict[str, Any], progress: bool, late: float
    ) -> None:
        self.sched, self.ro, self.run_dir, self.meta = sched, ro, run_dir, meta
        self.progress, self.late_percentile = progress, late
        self.raw = run_dir / "raw"
        self.rt: Runtime | None = None
        self.end: RuntimeEnd | None = None
        self.own: set[int] = set()

    def start_meta(self) -> dict[str, Any]:
        return self.meta

    def setup(self, s: lifecycle.Session) -> None:
        sched, ro, raw = self.sched, self.ro, self.raw
        s.nothing = "interrupted before the pipeline runtime started: nothing was run"
        raw.mkdir()
        (self.run_dir / "graph.yaml").write_text(sched.graph.text)
        SF.write(sched, self.run_dir / "schedule.yaml")
        (raw / "plan.bin").write_bytes(build_plan(sched, ro, float(s.meta["tsc_hz"])))
        if s.meta["tracing"]["enabled"]:
            s.trace(list(ro.cpus), self.run_dir / "trace", int(s.meta["tracing"]["buffer_kb"]))
        self.rt = Runtime(
            raw / "plan.bin", raw / "result.bin", raw / "heartbeat.bin", exit_timeout_s=max(60.0, 3 * ro.hang_s)
        )
        self.rt.start()
        # from here the runtime writes raw/result.bin whatever happens to us: the run is kept
        s.recorded = True
        self.own = sysinfo.thread_ids(os.getpid()) | sysinfo.thread_ids(self.rt.pid)
        s.stage(  # with what the recovery needs (own_tids: our threads, told apart in the trace)
            "running",
            t0_tsc=self.rt.t0_tsc,
            mlocked=self.rt.mlocked,
            threads=self.rt.threads,
            own_tids=sorted(self.own),
        )

    def capture(self, s: lifecycle.Session) -> None:
        assert self.rt is not None
        bar = Progress("running", self.ro.iterations, enabled=self.progress)
        try:
            while self.rt.running():
                bar.update(heartbeat_done(self.raw / "heartbeat.bin"))
                time.sleep(0.1)
        finally:
            bar.close()

    def stop(self, s: lifecycle.Session) -> None:
        rt = self.rt
        if rt is None:
            return
        rt.stop()  # (if still running) it finishes the iterations already started
        self.own |= sysinfo.thread_ids(os.getpid()) | sysinfo.thread_ids(rt.pid)
        try:
            self.end = end = rt.wait(timeout=rt.exit_timeout())
        except JitterscopeError as err:  # it failed (a kernel's error) or was killed
            if not result_written(self.raw / "result.bin"):  # nothing to keep: the session removes the run
                s.recorded = False
                raise JitterscopeError(f"{err}; it wrote no result: nothing was recorded", exit_code=1) from None
            s.child_died(str(err))  # what it wrote still counts: the run is built, the command fails
            return
        if end.interrupted:
            s.interrupt()
        s.meta.update(
            warnings=s.meta["warnings"] + end.warnings,
            first_violation=end.first_violation,
            hung=end.hung,
            own_tids=sorted(self.own),
        )

    def analyze(self, s: lifecycle.Session) -> Summary:
        meta = finished_meta(s.meta)
        trace = self.run_dir / "trace" if meta["tracing"]["enabled"] else None
        return build_run(self.run_dir, meta, self.sched, trace, self.own, self.late_percentile)


def finished_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """meta.json as the built run keeps it: no stage marker, no recovery-only fields."""
    return {k: v for k, v in meta.items() if k not in (*SESSION_MARKS, "own_tids")}


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
