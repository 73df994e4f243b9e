"""`jitterscope sync -- CMD`: its steps of the session lifecycle (session.py), with a program instead of the probe.

check the command → create the run directory → the session (journal, watchdog) →
setup: the private trace instance the session owns on the program's CPUs →
capture: sync-raw/meta.json (with the thread ids of this jitterscope's threads and
processes), then run CMD with libjssync.so preloaded (its
stdin/stdout/stderr are the user's; Ctrl-C and SIGTERM reach it, not us) and
wait → stop: what CMD's end tells (exit code, steal) → the trace stopped, the
journal undone → analyse (sync/build.py) → the program's exit code.  The raw
logs (`sync-raw/`) and trace (`trace/`) are written before any analysis and
kept, so a crash of the program or of the analysis loses nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitterscope import boundedio, childgroup, sysinfo
from jitterscope import session as lifecycle
from jitterscope.atomic import sweep_temporaries
from jitterscope.errors import JitterscopeError
from jitterscope.measure.capture import kept
from jitterscope.measure.tsc import Calibration
from jitterscope.native_bin import native_bin
from jitterscope.ownenv import program_environ
from jitterscope.rundir import base_meta, create_run_dir, write_json
from jitterscope.sync import overhead
from jitterscope.sync.model import Options
from jitterscope.sync.records import LIBRARY
from jitterscope.sync.warmup import (
    Policy,
    Warmup,
    can_leave_idle,
    draw_imports,
    fit_imports,
    lower_priority,
    raise_priority,
)
from jitterscope.tracing.session import complete_cut_short
from jitterscope.tracing.tracefs import tracing_available

if TYPE_CHECKING:
    from jitterscope.sync.summary import Summary


@dataclass
class SyncOptions:
    command: list[str]
    out_dir: Path
    analysis: Options = field(default_factory=Options)
    cpus: list[int] | None = None  # CPUs the program may use (default: all online)
    trace: bool = True
    buffer_kb: int = 8192
    report: bool = True
    command_line: list[str] = field(default_factory=lambda: list(sys.argv))


def check_command(cmd: list[str]) -> str:
    """The program's path; one-line errors for a missing, non-executable or static program."""
    if not cmd:
        raise JitterscopeError("no command: give it after --, e.g. jitterscope sync -- ./myprog args")
    path = shutil.which(cmd[0])
    if path is None:
        raise JitterscopeError(f"{cmd[0]}: command not found")
    boundedio.check_file(path, "program", boundedio.NO_CAP)  # only its ELF header is read
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as err:
        raise JitterscopeError(f"{path}: cannot read ({err.strerror})") from None
    if head[:4] == b"\x7fELF" and not _dynamic(path, head):
        raise JitterscopeError(
            f"{path} is statically linked: the interposer cannot attach (LD_PRELOAD needs a dynamically linked program)"
        )
    return path


def _dynamic(path: str, head: bytes) -> bool:
    """Whether an ELF file asks for a program interpreter (PT_INTERP): the dynamic loader does LD_PRELOAD."""
    if head[4] != 2:  # only 64-bit ELF here
        return True
    phoff = int.from_bytes(head[32:40], "little")
    phentsize, phnum = int.from_bytes(head[54:56], "little"), int.from_bytes(head[56:58], "little")
    with open(path, "rb") as f:
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return any(int.from_bytes(table[k * phentsize : k * phentsize + 4], "little") == 3 for k in range(phnum))


def _tracing_state(trace: bool) -> tuple[bool, str | None]:
    if not trace:
        return False, "disabled with --no-trace"

    return tracing_available()


def program_env(raw_dir: Path, cpus: list[int]) -> dict[str, str]:
    """The program's environment: the interposer preloaded, its output directory, the writer's CPUs."""
    env = program_environ()
    lib = str(native_bin(LIBRARY))
    env["LD_PRELOAD"] = f"{lib}:{env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else lib
    env["JS_SYNC_DIR"] = str(raw_dir.resolve())
    spare = sorted(set(sysinfo.online_cpus()) - set(cpus))
    if spare:
        env["JS_SYNC_WRITER_CPUS"] = ",".join(map(str, spare))
    return env


def run_program(cmd: list[str], env: dict[str, str], cpus: list[int] | None) -> tuple[int, bool, int]:
    """Run CMD to its end; SIGINT/SIGTERM sent to us go to it.  Returns (exit code, interrupted, CLOCK_MONOTONIC
    when it was seen to end: a crashed program's end, which its own records cannot give)."""
    aff = set(cpus) if cpus else None
    try:
        proc = subprocess.Popen(cmd, env=env, preexec_fn=(lambda: os.sched_setaffinity(0, aff)) if aff else None)
    except OSError as err:
        raise JitterscopeError(f"{cmd[0]}: cannot run ({err.strerror})") from None
    got: list[int] = []

    def forward(sig: int, _frame: Any) -> None:
        got.append(sig)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                rc = proc.wait()
                ended = time.monotonic_ns()
                break
            except InterruptedError:
                continue
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return (128 - rc if rc < 0 else rc), bool(got) or rc in (-signal.SIGINT, -signal.SIGTERM), ended


def run_sync(opts: SyncOptions) -> tuple[Path, int]:
    """Run and analyse; return the run directory and the program's exit code."""

    started = overhead.process_start_ns()
    path = check_command(opts.command)
    cpus = opts.cpus or sysinfo.online_cpus()
    sysinfo.check_cpus(cpus)
    tracing_ok, reason = _tracing_state(opts.trace)
    calibration = Calibration()  # its 150 ms spent while the run is set up (SyncSteps.setup)
    run_dir = create_run_dir(opts.out_dir)
    meta: dict[str, Any] = base_meta(
        kind="sync",
        id=run_dir.name,
        host=sysinfo.host(),
        kernel=sysinfo.kernel(),
        command_line=opts.command_line,
        command=opts.command,
        program=path,
        start=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        start_unix_ns=time.time_ns(),
        cpus=cpus,
        cpu_model=sysinfo.cpu_model(),
        clocksource=sysinfo.clocksource(),
        virtualization=sysinfo.virtualization(),
        options={
            "threshold_ns": opts.analysis.threshold_ns,
            "mode": opts.analysis.mode,
            "lu_sleep_only": opts.analysis.lu_sleep_only,
            "merge_at_barrier": opts.analysis.merge_at_barrier,
            "subframe_ns": opts.analysis.subframe_ns,
            "warmup_subframes": opts.analysis.warmup_subframes,
            "trace": opts.trace,
            "buffer_kb": opts.buffer_kb,
        },
        tracing={
            "enabled": tracing_ok,
            "reason": reason,
            "clock": "x86-tsc" if tracing_ok else None,
            "buffer_kb": opts.buffer_kb if tracing_ok else None,
        },
        duration_s=0.0,
        tsc_hz=None,
    )
    steps = SyncSteps(opts, run_dir, meta, cpus, tracing_ok, started, calibration)
    try:
        try:
            # the fit's process, and the one that draws the report's figures while the analysis finishes, forked
            # now, before the session or the warm-up start a thread (sync/build.py)
            helpers = childgroup.ForkedPool.several(1, 1) if opts.report else [childgroup.ForkedPool(1)]
            steps.fitter, steps.drawer = helpers[0], (helpers[1] if opts.report else None)
            with contextlib.ExitStack() as stack:
                for pool in helpers:
                    stack.enter_context(pool)
                steps.start_helpers()
                _, summary = lifecycle.run(steps, run_dir)
        except (JitterscopeError, OSError) as err:
            if not run_dir.exists():  # the session removed it: nothing was recorded
                raise
            raise kept(run_dir, err, steps.doing) from None
        if opts.report:
            _report(run_dir)
            overhead.record(run_dir, summary, steps.overhead(time.monotonic_ns()))
    finally:
        if opts.report:  # figures drawn for a run whose report was not written
            from jitterscope.sync.report import forget

            forget(run_dir)
    return run_dir, steps.code


class SyncSteps:
    """sync's steps of the session lifecycle (session.py): CMD instead of measure's probe."""

    kind = "sync"

    def __init__(
        self,
        opts: SyncOptions,
        run_dir: Path,
        meta: dict[str, Any],
        cpus: list[int],
        tracing_ok: bool,
        started: int,
        calibration: Calibration,
    ) -> None:
        self.calibration = calibration
        self.opts, self.run_dir, self.meta, self.cpus, self.tracing_ok = opts, run_dir, meta, cpus, tracing_ok
        self.raw = run_dir / "sync-raw"
        self.started = started  # when this jitterscope started (its own share of the wall time: sync/overhead.py)
        self.begun = self.ended = self.analysed = 0
        self.code = 0
        self.ran = False
        self.doing = "running CMD"  # what a failure interrupted
        self.steal_before: dict[int, int] = {}
        self.fitter: childgroup.ForkedPool | None = None  # the fit's process (run_sync)
        self.drawer: childgroup.ForkedPool | None = None  # the report's figures' process (run_sync)
        self.helpers: dict[childgroup.ForkedPool, int] = {}  # those importing from the start: their process ids
        self.lowered: dict[int, Policy] = {}  # their policies before CMD, while they are lowered
        self.own_tids: set[int] = set()  # this jitterscope's threads and processes (capture)

    def start_meta(self) -> dict[str, Any]:
        return self.meta

    def setup(self, s: lifecycle.Session) -> None:
        self.raw.mkdir()
        if self.tracing_ok:
            s.trace(self.cpus, self.run_dir / "trace", self.opts.buffer_kb)
        self.meta["tsc_hz"] = s.meta["tsc_hz"] = self.calibration.result()
        self.steal_before = sysinfo.steal_ticks(self.cpus)

    def capture(self, s: lifecycle.Session) -> None:
        self.begun = time.monotonic_ns()
        # the analysis's imports while CMD runs
        warm = Warmup(self.tracing_ok, self.opts.report, draw=self.drawer is None).start()
        # this jitterscope's threads and processes (warm-up, fit, trace reader, watchdog), told apart from
        # another jitterscope's in the trace by id
        self.own_tids = sysinfo.tree_thread_ids(os.getpid()) | {warm.native_id()}
        # before CMD runs: what `jitterscope analyze` needs if we are killed
        write_json(self.raw / "meta.json", {**self.meta, OWN_TIDS: sorted(self.own_tids)})
        # the fit's and the drawing's processes go on with their imports (`start_helpers`) below the warm-up
        for pid in self.helpers.values():
            if (before := lower_priority(pid)) is not None:
                self.lowered[pid] = before
        try:
            self.code, interrupted, self.ended = run_program(
                self.opts.command, program_env(self.raw, self.cpus), self.opts.cpus
            )
        finally:
            warm.finish()
            for pid, before in self.lowered.items():
                raise_priority(pid, before)
            for pool, imports in self._helpers():
                if pool not in self.helpers:
                    with contextlib.suppress(JitterscopeError):  # a dead helper fails its own work, not this
                        pool.submit(imports)
        self.ran = True
        if interrupted:
            s.interrupt()

    def _helpers(self) -> list[tuple[childgroup.ForkedPool, Callable[[], None]]]:
        pools = ((self.fitter, fit_imports), (self.drawer, draw_imports))
        return [(pool, imports) for pool, imports in pools if pool is not None]

    def start_helpers(self) -> None:
        """The fit's and the drawing's processes start their imports now, at normal priority while this one sets
        the run up (a CPU is mostly free then), and go on at the lowest priority while CMD runs (`capture`), as
        the warm-up does (sync/warmup.py).  Only where they can be raised back when CMD ends (`can_leave_idle`);
        else they import when CMD has ended.  A failure there, if any, is the fit's or the drawing's own when it
        runs."""
        if not can_leave_idle():
            return
        for pool, imports in self._helpers():
            with contextlib.suppress(JitterscopeError):  # a dead helper fails its own work, not this
                self.helpers[pool] = pool.result(pool.submit(os.getpid))  # its one worker, idle: at once
                pool.submit(imports)

    def stop(self, s: lifecycle.Session) -> None:
        """CMD has ended (it is not ours to stop: a killed jitterscope leaves it to run to its end)."""
        s.recorded = any(self.raw.glob("sync-*.raw"))
        self.doing = "finishing the capture"
        if not self.ran:
            return
        cpus = self.cpus
        steal = sum(sysinfo.steal_ticks(cpus).get(c, 0) - self.steal_before.get(c, 0) for c in cpus)
        ended = dict(
            exit_code=self.code,
            interrupted=s.interrupted,
            steal_ns=steal * 1e9 / sysinfo.user_hz(),
            program_end_mono_ns=self.ended,
        )
        self.meta.update(ended)
        s.meta.update(ended)  # in meta.json from here: a recovery after a kill during analysis knows them
        s.nothing = (
            f"{self.opts.command[0]} left no sync records: the interposer did not load (a setuid "
            f"program, or one that clears LD_PRELOAD); exit code {self.code}"
        )

    def analyze(self, s: lifecycle.Session) -> Summary:
        self.doing = "analysing"
        trace = self.run_dir / "trace" if self.tracing_ok else None
        from jitterscope.sync.build import build  # the warm-up's import, done while CMD ran

        summary = build(
            self.run_dir,
            self.meta,
            float(self.meta["tsc_hz"]),
            self.opts.analysis,
            trace,
            self.fitter,
            self.own_tids,
            self.drawer,
        )
        self.analysed = time.monotonic_ns()
        overhead.record(self.run_dir, summary, self.overhead(None))
        return summary

    def overhead(self, reported: int | None) -> overhead.Overhead:
        return overhead.measure(self.started, self.begun, self.ended, self.analysed, reported)


def analyze_cut_short(run_dir: Path, report: bool = True) -> list[str]:
    """Finish a sync run whose jitterscope was killed (kill -9, SIGHUP) while CMD ran or while the run was
    built: the analysis from the raw logs and trace kept in the run directory.  Returns what could not be
    recovered; a run killed before CMD wrote a record is one line saying so."""

    if not any((run_dir / "sync-raw").glob("sync-*.raw")):
        lifecycle.cut_short(run_dir, "nothing to analyse (CMD left no sync records in sync-raw/)")
    sweep_temporaries(run_dir)
    meta = boundedio.read_json(run_dir / "sync-raw" / "meta.json", "raw run metadata")
    own_tids = set(meta.pop(OWN_TIDS, None) or [])
    # what the session recorded once CMD had ended (SyncSteps.stop), if it got that far
    session_meta = lifecycle.read_meta(run_dir)
    ended = {k: session_meta.get(k) for k in _ENDED} if "exit_code" in session_meta else {}
    o = meta["options"]
    opts = Options(
        threshold_ns=o["threshold_ns"],
        mode=o["mode"],
        lu_sleep_only=o["lu_sleep_only"],
        merge_at_barrier=o["merge_at_barrier"],
        subframe_ns=o.get("subframe_ns", 330_000),
        warmup_subframes=o.get("warmup_subframes", 90),
    )
    trace = run_dir / "trace"
    # a trace whose pages were never written (a full disk) is no trace, however it was set up
    pages = sum(p.stat().st_size for p in trace.glob("cpu*.raw")) if trace.is_dir() else 0
    traced = bool(meta["tracing"]["enabled"]) and (trace / "events.txt").exists() and pages > 0
    missing = [] if ended else ["CMD's exit code (jitterscope was not there to see it end)", "steal time over the run"]
    if meta["tracing"]["enabled"] and not traced:
        missing.append("the kernel trace: no page of it was kept (no causes, holder delay or non-sync jitter)")
        meta["tracing"].update(enabled=False, reason="trace lost: no page of it was kept (a full disk, or a kill)")
    elif traced:  # the session never stopped it: window, symbols, comms, lost events, reader completed offline
        missing += complete_cut_short(trace, None, "the trace's last event")
    meta.update(exit_code=None, interrupted=True, steal_ns=None)
    meta.update(ended, recovered={"missing": missing})
    from jitterscope.sync.build import build

    build(run_dir, meta, float(meta["tsc_hz"]), opts, trace if traced else None, own_tids=own_tids)
    if report:
        _report(run_dir)
    return missing


# in sync-raw/meta.json only: the thread ids of the jitterscope that ran CMD (SyncSteps.capture)
OWN_TIDS = "own_tids"
# meta fields known once CMD has ended (SyncSteps.stop)
_ENDED = ("exit_code", "interrupted", "steal_ns", "program_end_mono_ns")


def _report(run_dir: Path) -> None:

    try:
        from jitterscope.report.pages import write_report  # the warm-up's import, done while CMD ran

        write_report(run_dir)
    except JitterscopeError as err:
        print(f"jitterscope: warning: report not written: {err}", file=sys.stderr)
