"""The lifecycle of one `protect` run, shared by every signal, actuator and law.

check (plan.py) -> run directory -> journal -> report pages (a scratch dir in
/dev/shm) -> best-effort programs -> critical program -> choose the signal ->
actuator set-up -> controller ready -> journal the controller and say go ->
supervise (critical ends, duration, Ctrl-C) -> stop the controller (it resumes
everything) -> stop the programs -> undo the journal -> build the run from the
raw records.  Every change is journalled before it is made, so an exception,
Ctrl-C, kill -9 + `jitterscope restore` leaves the machine as it was found.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from jitterscope import session as lifecycle
from jitterscope import sysinfo
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal
from jitterscope.progress import Progress
from jitterscope.protect import actuators, build, programs, runmeta, signals
from jitterscope.protect.actuators import Unit
from jitterscope.protect.controller import Controller
from jitterscope.protect.outcome import RECORDS, Outcome
from jitterscope.protect.plan import Plan, law_args
from jitterscope.protect.report import ReportPage
from jitterscope.protect.results import HostFacts, ProgramInfo, Summary
from jitterscope.protect.slacklaw import load, suspension_for
from jitterscope.rundir import create_run_dir


def run(plan: Plan) -> tuple[Path, Outcome]:
    """Run the plan through the session lifecycle (session.py); the run directory and what happened
    (`out.summary` holds the built run's summary)."""
    if plan.replay is not None:
        from jitterscope.protect.replay import run_plan

        run_dir, out = run_plan(plan)
        out.summary = build.build(run_dir, runmeta.meta(plan, out, run_dir), run_dir / RECORDS)
        return run_dir, out
    out = Outcome(started_unix_ns=time.time_ns())
    needs_peak = (
        plan.signal in ("auto",) + signals.BANDWIDTH
        and plan.peak_bps is None
        and (plan.threshold or "%").endswith("%")
        and bool(plan.be_cmds or plan.be_pids)
    )
    if needs_peak:
        out.peak = signals.peak_bandwidth(plan.cpus[0])
    elif plan.peak_bps is not None:
        out.peak = (plan.peak_bps, plan.peak_bps)
    run_dir = create_run_dir(plan.out)
    (run_dir / "raw").mkdir()
    s, _ = lifecycle.run(ProtectSteps(plan, out, run_dir), run_dir)
    return run_dir, out


class ProtectSteps:
    """protect's steps of the session lifecycle."""

    kind = "protect"

    def __init__(self, plan: Plan, out: Outcome, run_dir: Path) -> None:
        self.plan, self.out, self.run_dir = plan, out, run_dir
        self.started: list[programs.Program] = []
        self.ctl: Controller | None = None
        self._moved: dict[int, set[int]] = {}  # our threads' CPU masks before setup confined them

    def start_meta(self) -> dict[str, Any]:
        return runmeta.meta(self.plan, self.out, self.run_dir)

    def setup(self, s: lifecycle.Session) -> None:
        plan, out, j = self.plan, self.out, s.journal
        s.nothing = "interrupted before the controller started: nothing was measured"
        # jitterscope itself (every thread of it) stays on the best-effort CPUs, off the critical ones
        self._moved = sysinfo.move_threads(lambda mask: mask & set(plan.cpus))
        pages = j.scratch_dir("jitterscope-protect-", parent="/dev/shm")
        units = [Unit(c) for c in plan.cpus]
        crit_page = _start_programs(plan, j, self.run_dir, pages, units, self.started)
        self.ctl = _controller(plan, j, self.run_dir, units, crit_page, out)
        self.ctl.start()
        j.process_group(self.ctl.pid)
        # everything the recovery needs to rebuild the run from raw/controller.bin, before it holds a record
        s.stage("controlling", **runmeta.meta(plan, out, self.run_dir))
        s.t0 = time.monotonic()
        self.ctl.go()
        out.controlling = s.recorded = True

    def capture(self, s: lifecycle.Session) -> None:
        assert self.ctl is not None
        _supervise(self.plan, self.ctl, self.started, self.out, s.t0)

    def stop(self, s: lifecycle.Session) -> None:
        out = self.out
        try:
            if self.ctl is not None and out.controlling:
                self.ctl.stop()
                out.wall_s = time.monotonic() - s.t0
                try:
                    out.end = self.ctl.wait().end
                except JitterscopeError as err:  # killed: its records up to the last drain still count
                    out.error = str(err)
                    if not out.interrupted:  # it died by itself: the run is cut short, and the command fails
                        s.child_died(f"the controller died ({err})")
                        out.interrupted, out.ended_by = True, s.ended_by
            if s.interrupted and not out.interrupted:
                out.interrupted, out.ended_by = True, "interrupted"
        finally:
            for p in self.started:
                programs.stop(p)
            out.programs = [_describe(p) for p in self.started] + [_describe(p) for p in self.plan.given_programs]
            sysinfo.restore_affinities(self._moved)

    def analyze(self, s: lifecycle.Session) -> Summary:
        self.out.summary = build.build(
            self.run_dir, runmeta.meta(self.plan, self.out, self.run_dir), self.run_dir / RECORDS
        )
        return self.out.summary


def _start_programs(
    plan: Plan, j: Journal, run_dir: Path, pages: Path, units: list[Unit], started: list[programs.Program]
) -> Path | None:
    for i, argv in enumerate(plan.be_cmds):
        u = units[i % len(units)]
        page = pages / f"best-effort-{i}.page"
        ReportPage.create(page)
        prog = programs.start(j, "best-effort", argv, [u.cpu], page, run_dir / "raw" / f"best-effort-{i}.log")
        started.append(prog)
        u.programs.append(prog)
        u.pages.append(page)
    for k, prog in enumerate(p for p in plan.given_programs if p.role == "best-effort"):
        u = units[(len(plan.be_cmds) + k) % len(units)]
        for tid in _threads(prog.pid):
            j.set_affinity(tid, {u.cpu})
        u.programs.append(prog)
    crit_page = plan.critical_page
    if plan.critical_cmd:
        crit_page = pages / "critical.page"
        ReportPage.create(crit_page)
        started.append(
            programs.start(
                j, "critical", plan.critical_cmd, plan.critical_cpus, crit_page, run_dir / "raw" / "critical.log"
            )
        )
    return crit_page


def _threads(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        raise JitterscopeError(f"process {pid} ended before it could be pinned") from None


def _controller(
    plan: Plan, j: Journal, run_dir: Path, units: list[Unit], crit_page: Path | None, out: Outcome
) -> Controller:
    be_pages = [pg for u in units for pg in u.pages]
    be_publish = (
        bool(be_pages)
        and len(be_pages) == sum(len(u.programs) for u in units)
        and programs.wait_attached(be_pages, 1.0)
    )
    deadline = plan.deadline_ns
    if crit_page is not None and programs.wait_attached([crit_page], 1.0 if plan.critical_cmd else 0.0):
        page = ReportPage(crit_page, writable=False)
        deadline = deadline or (page.counters()["deadline_ns"] or None)
        page.close()
    out.deadline_ns = deadline
    out.signal, out.signal_reason = signals.choose(
        plan.signal, plan.cpus, be_publish, crit_page is not None and bool(deadline), event=plan.sampling == "event"
    )
    out.s_ns = _suspension(plan, deadline)
    if plan.law == "slack" and out.s_ns == 0:
        out.signal, out.signal_reason = "none", "slack law: the calibration meets the deadline at full share"
        out.s_ns = plan.ts_ns
    args = law_args(plan, out.s_ns) + ["--signal", out.signal, "--fifo", str(_priority(plan))]
    args += _threshold_args(plan, out, deadline, crit_page)
    if plan.duration_ns:
        args += ["--duration-ns", str(int(plan.duration_ns))]
    if plan.compare_ns:
        args += ["--phase-ns", str(int(plan.compare_ns)), "--phase-first", "off"]
    if crit_page is not None:
        args += ["--critical-page", str(crit_page)]
    if out.signal == "pmu":
        args += signals.pmu_args()
    args += actuators.prepare(
        j, plan.actuator, plan.cgroup_version, units, plan.be_cgroup, plan.ts_ns, plan.longest_s_ns
    )
    for u in units:
        args += _unit_args(u)
    return Controller(args, run_dir / RECORDS, int(plan.duration_ns) if plan.duration_ns else None, plan.cpus)


def _priority(plan: Plan) -> int:
    """SCHED_FIFO for the control threads where permitted; an unprivileged user's sigstop controller
    runs SCHED_OTHER (0) instead, and says so (the rt blocker needs root: plan.py refused it)."""
    import resource

    if os.geteuid() == 0 or plan.actuator == "rt":
        return plan.priority
    soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
    if soft == resource.RLIM_INFINITY or soft >= plan.priority:
        return plan.priority
    print(
        f"jitterscope: note: SCHED_FIFO {plan.priority} is not permitted (RLIMIT_RTPRIO {soft}); the control "
        f"threads run SCHED_OTHER, so their sampling is less regular",
        file=sys.stderr,
    )
    plan.priority = 0
    return 0


def _suspension(plan: Plan, deadline: float | None) -> float:
    if plan.law != "slack":
        return plan.s_ns

    assert plan.calibration is not None and deadline is not None
    return suspension_for(load(plan.calibration), deadline, plan.ts_ns)


def _threshold_args(plan: Plan, out: Outcome, deadline: float | None, crit_page: Path | None) -> list[str]:
    sig = out.signal
    text = plan.threshold if plan.threshold and plan.signal != "auto" else signals.default_threshold(sig)
    if plan.threshold and plan.signal == "auto":
        text = plan.threshold
    t = signals.parse_threshold(text, sig) if text else signals.Threshold()
    out.threshold = {"text": text}
    if sig in signals.BANDWIDTH:
        if t.percent is not None:
            if out.peak is None:
                raise JitterscopeError(f"--threshold {text}: a percentage needs the peak bandwidth (--peak BW)")
            t.read_bps, t.write_bps = t.percent * out.peak[0], t.percent * out.peak[1]
        out.threshold.update({"read_bps": t.read_bps, "write_bps": t.write_bps})
        return [f"--threshold-{k}={int(v)}" for k, v in (("read", t.read_bps), ("write", t.write_bps)) if v]
    if sig == "slack":
        if deadline is None:
            raise JitterscopeError("the slack signal needs a deadline: --deadline or the critical program's own")
        slack_ns = t.ns if t.ns is not None else (t.percent or 0.0) * deadline
        out.threshold.update({"slack_ns": slack_ns, "deadline_ns": deadline})
        return ["--threshold-slack-ns", str(int(slack_ns)), "--deadline-ns", str(int(deadline))]
    if sig in ("noise", "cputime"):
        out.threshold.update({"ratio": t.percent})
        args = ["--threshold-ratio-ppm", str(int((t.percent or 0) * 1e6))]
        if sig == "noise":
            args += ["--noise-cpu", str(plan.critical_cpus[0]), "--noise-bytes", str(8 << 20), "--noise-steps", "32"]
        return args
    return []


def _unit_args(u: Unit) -> list[str]:
    args = ["--unit", str(u.cpu)]
    for pg in u.pages:
        args += ["--report-page", str(pg)]
    for p in u.programs:
        args += ["--pgid" if p.group else "--pid", str(p.pid)]
    if u.act_file is not None:
        args += ["--act-file", str(u.act_file)]
    if u.confirm_file is not None:
        args += ["--confirm-file", str(u.confirm_file)]
    return args


def _supervise(plan: Plan, ctl: Controller, started: list[programs.Program], out: Outcome, t0: float) -> None:
    total = (plan.duration_ns or 0) / 1e9
    bar = Progress("protect", total, "s", enabled=plan.progress and total > 0)
    critical = [p for p in started + plan.given_programs if p.role == "critical"]
    best = [p for p in started + plan.given_programs if p.role == "best-effort"]
    try:
        while ctl.running():
            if critical and not critical[0].alive():
                out.ended_by = "the critical program ended"
                break
            if best and not any(p.alive() for p in best):
                out.ended_by = "every best-effort program ended"
                break
            time.sleep(0.1)
            bar.update(time.monotonic() - t0)
        else:
            out.ended_by = out.ended_by or "duration"
    except KeyboardInterrupt:
        out.interrupted, out.ended_by = True, "interrupted"
        print("\njitterscope: interrupted; stopping the controller (it resumes everything first)", file=sys.stderr)
    finally:
        bar.close()


def _describe(p: programs.Program) -> ProgramInfo:
    return {
        "role": p.role,
        "name": p.name,
        "pid": p.pid,
        "argv": p.argv,
        "cpus": p.cpus,
        "started": bool(p.argv),
        "exit_code": p.returncode(),
        "log": str(p.log.name) if p.log else None,
    }


def host_facts() -> HostFacts:
    return {
        "host": sysinfo.host(),
        "kernel": sysinfo.kernel(),
        "cpu_model": sysinfo.cpu_model(),
        "clocksource": sysinfo.clocksource(),
        "virtualization": sysinfo.virtualization(),
    }
