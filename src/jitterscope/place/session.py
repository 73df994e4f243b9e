"""The lifecycle of one `place` run.

plan (plan.py) -> run directory -> journal -> pages in a scratch dir in
/dev/shm (and the fault FIFO with OBS-F) -> tasks started one at a time, each
weighed and placed (OBS-X) as it arrives -> the actuator set up -> the loop
(engine.py) until --duration, the last task's end or Ctrl-C, every observation
and decision appended to place.raw as it is made (raw.py) -> every task let run
-> our commands stopped -> place.raw's end record, fsynced -> the journal undone
(affinity, stopped or frozen tasks, cgroups) -> the run's tables, summary and
meta.json complete, built from place.raw (build.py), which then goes.  The steps run in
the session lifecycle (session.py): its watchdog undoes the journal at once
after a kill -9, and meta.json (marked incomplete) says what the directory is.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jitterscope import session as lifecycle
from jitterscope import sysinfo
from jitterscope.place import build, policy
from jitterscope.place.actuate import Actuator
from jitterscope.place.engine import Config, Engine
from jitterscope.place.plan import Plan
from jitterscope.place.pmu import Counters
from jitterscope.place.raw import RAW, RawWriter
from jitterscope.place.records import FAULTS_ENV, LITTLE_ENV
from jitterscope.place.results import Decision
from jitterscope.place.tasks import Affinity, Placed, given, start
from jitterscope.protect import programs
from jitterscope.rundir import create_run_dir, new_run_path
from jitterscope.units import format_cpulist


def _selected(selectors: list[str], p: Placed) -> str | None:
    """The first selector naming this task (its PID, program name, comm or a cgroup path), or None."""
    names = {str(p.pid), p.t.name, Path(p.prog.argv[0]).name if p.prog.argv else ""}
    try:
        argv0 = Path(f"/proc/{p.pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        names.add(Path(argv0).name)
        cg = Path(f"/proc/{p.pid}/cgroup").read_text()
    except (OSError, UnicodeDecodeError):
        cg = ""
    for sel in selectors:
        if sel in names or (
            sel.startswith("/") and any(ln.endswith(":" + sel.split("/sys/fs/cgroup", 1)[-1]) for ln in cg.splitlines())
        ):
            return sel
    return None


def _declared(plan: Plan, p: Placed) -> float | None:
    if plan.weights not in ("auto", "declared"):
        return None
    sel = _selected(list(plan.declared), p)
    if sel is None:
        return None
    p.source = plan.sources.get(sel, "declared")
    return plan.declared[sel]


def _initial_weight(plan: Plan, p: Placed) -> None:
    """What the task weighs when it arrives: declared, or the oracle's first publication (up to 1 s)."""
    p.declared = _declared(plan, p)
    if p.declared is not None:
        p.t.weight = p.declared
        return
    deadline = time.monotonic() + 1.0
    while p.page is not None and plan.weights in ("auto", "oracle") and time.monotonic() < deadline:
        w = p.page.counters()["weight_ppm"]
        if w >= 0:
            p.t.weight = w / 1e6
            return
        time.sleep(0.01)


def _home(eng: Engine, plan: Plan, p: Placed, n: int) -> None:
    """OBS-X places a new task on the least-loaded group; otherwise round-robin over --cpus."""
    if "X" in plan.policies and p.prog.group:
        gs = eng.groups()
        g = policy.place_new([sum(q.t.weight for q in x) for x in gs], [len(x) for x in gs])
        p.t.home = eng.least_loaded(eng.group_cpus(g) or plan.cpus)
        eng.decide(
            "X", p, "place", p.t.home, f"new task (weight {p.t.weight:.3g}) to the least-loaded group {g}", p.t.weight
        )
        return
    own = sorted(os.sched_getaffinity(p.pid)) if not p.prog.group else []
    p.t.home = own[0] if len(own) == 1 and own[0] in plan.cpus else plan.cpus[n % len(plan.cpus)]
    eng.decide("-", p, "home", p.t.home, "its own single CPU" if len(own) == 1 else "round-robin over --cpus")


def _arrive(eng: Engine, plan: Plan, p: Placed, n: int) -> None:
    _initial_weight(plan, p)
    p.protected = _selected(plan.protect, p) is not None
    if plan.pmu_ok and plan.weights in ("auto", "pmu") and p.declared is None:
        p.pmu = Counters([int(t) for t in os.listdir(f"/proc/{p.pid}/task")])
    _home(eng, plan, p, n)
    eng.tasks.append(p)
    p.base_cpus = eng.base_cpus(p)
    eng.move(p, p.base_cpus)


def run(plan: Plan, progress: bool) -> Path:
    """One place run through the session lifecycle (session.py)."""
    run_dir = create_run_dir(plan.out or new_run_path(sysinfo.host(), "place"))
    lifecycle.run(PlaceSteps(plan, progress, run_dir), run_dir)
    return run_dir


class PlaceSteps:
    """place's steps of the session lifecycle.  Raw first: from its setup on, what the engine sees (its
    observations, decisions, the tasks' states) is appended to `place.raw` (raw.py), handed to the kernel
    at every loop turn; `stop` adds the run's end and fsyncs it; `analyze` builds the run from it, the
    same way `jitterscope analyze` does after a kill at any moment (build.finish)."""

    kind = "place"

    def __init__(self, plan: Plan, progress: bool, run_dir: Path) -> None:
        self.plan, self.run_dir = plan, run_dir
        self.cfg = Config(
            plan.policies,
            plan.settings,
            plan.cpus,
            plan.dry_run,
            on_decision=_printer() if plan.dry_run and progress else None,
        )
        self.eng = Engine(self.cfg, plan.topo, [], None, None)
        self.ended_by, self.t_start, self.wall = "error", time.time_ns(), 0

    def start_meta(self) -> dict[str, Any]:
        return build.meta(self.plan, self.t_start)

    def setup(self, s: lifecycle.Session) -> None:
        plan, eng, j = self.plan, self.eng, s.journal
        eng.aff = Affinity(j)
        scratch = j.scratch_dir("jitterscope-place-", parent="/dev/shm" if Path("/dev/shm").is_dir() else None)
        env = {LITTLE_ENV: format_cpulist(plan.topo.little)} if plan.topo.little else {}
        if "F" in plan.policies:
            os.mkfifo(scratch / "faults", 0o600)
            eng.fifo = os.open(scratch / "faults", os.O_RDONLY | os.O_NONBLOCK)
            env[FAULTS_ENV] = str(scratch / "faults")
        eng.raw = RawWriter(self.run_dir / RAW)
        eng.raw.run(build.run_facts(plan, self.cfg.slots))
        eng.raw.flush()
        s.recorded = True  # place writes its run whenever it is stopped, even before a task started
        for n, argv in enumerate(plan.cmds):
            _arrive(eng, plan, start(j, argv, plan.cpus, scratch, n, env), n)
        for n, pid in enumerate(plan.pids, len(plan.cmds)):
            _arrive(eng, plan, given(pid, "--tasks"), n)
        if self.cfg.slots and not plan.dry_run:
            eng.act = Actuator(j, plan.actuator, eng.tasks)

    def capture(self, s: lifecycle.Session) -> None:
        self.ended_by = self.eng.run(self.plan.duration_ns or float("inf"), lambda: False)

    def stop(self, s: lifecycle.Session) -> None:
        eng = self.eng
        if s.interrupted:
            self.ended_by = "interrupted"
        eng.finish()
        self.wall = eng.now()
        for p in eng.tasks:
            programs.stop(p.prog)
            if not p.end and p.prog.returncode() == -4:
                eng.drop(p)
        if eng.fifo is not None:
            os.close(eng.fifo)
            eng.fifo = None
        eng.raw.end(self.wall, self.ended_by, [p.final() for p in eng.tasks])
        eng.raw.close()  # fsynced: the run can be rebuilt from here on

    def analyze(self, s: lifecycle.Session) -> None:
        build.finish(self.run_dir)


def _printer() -> Callable[[Decision], None]:
    def show(d: Decision) -> None:
        print(
            f"{d['t_ns'] / 1e9:8.3f}s  {d['policy']:<5} {d['action']:<8} {d['name']}[{d['pid']}] cpu {d['cpu']}: "
            f"{d['reason']}",
            file=sys.stderr,
        )

    return show
