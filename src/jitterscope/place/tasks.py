"""The tasks `place` controls: started by it (`--cmd`, `-- CMD`) or given (`--tasks`, `--cgroup`).

A command is started through protect's program launcher (its own process
group, journalled before it runs, pinned from its first instruction) with a
report page (throughput) and a place page (oracle weight, faults) in the
environment.  Affinity changes go through the journal (knobs/tasks.py): the
first change of each thread records its original CPUs, later ones move it
again, and undo restores the original.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal
from jitterscope.knobs.tasks import set_affinity, stat_fields, threads
from jitterscope.place.observe import Beats, Snap
from jitterscope.place.pmu import Counters
from jitterscope.place.policy import Task
from jitterscope.place.records import PlacePage
from jitterscope.place.results import Latency, TaskEnd, TaskState
from jitterscope.protect import programs
from jitterscope.protect.report import ReportPage
from jitterscope.units import format_cpulist


@dataclass
class Placed:
    """One task: the policies' view (`t`), its program, pages and last observation."""

    t: Task
    prog: programs.Program
    declared: float | None = None
    source: str = "declared"  # the declared weight's stand-in (plan.STAND_INS)
    page: PlacePage | None = None
    report: ReportPage | None = None
    pmu: Counters | None = None
    snap: Snap | None = None
    snap_ns: int = 0
    first: Snap | None = None
    first_ns: int = 0  # when `first` was taken: counts since it cover first_ns..snap_ns, not the whole run
    base_cpus: list[int] = field(default_factory=list)  # where the policies (not OBS-F) want it
    f_home: int = -1  # its CPU before OBS-F pinned it to a big one
    end: str = ""  # why it left: ended, killed by SIGILL, ...
    stopped: bool = False
    protected: bool = False  # --protect: its noise is an objective (OBS-L)
    beats: Beats | None = None  # its heartbeats, if it publishes any

    @property
    def pid(self) -> int:
        return self.prog.pid

    def state(self) -> TaskState:
        """What the run keeps of the task now (raw.py's `t` records): counts from its first to its last
        observation, the window they cover (a rate over the whole run would undercount)."""
        a, b = self.first, self.snap
        return {
            "pid": self.pid,
            "name": self.t.name,
            "command": self.prog.argv,
            "home": self.t.home,
            "declared": self.declared,
            "weight": self.t.weight,
            "run_ns": b.run_ns - a.run_ns if a and b else 0,
            "wait_ns": b.wait_ns - a.wait_ns if a and b else 0,
            "ivcsw": b.ivcsw - a.ivcsw if a and b else 0,
            "ops": b.ops - a.ops if a and b else 0,
            "specials": b.specials if b else 0,  # since the task's start
            "faults": b.faults if b else 0,
            "window_ns": self.snap_ns - self.first_ns if a and b else 0,
            "faulting_quanta": self.t.f.faulting_quanta,
            "banned": self.t.f.banned,
            "credit_ns": self.t.credit_ns,
            "end": self.end,  # "" while it runs
            "protected": self.protected,
            "heartbeats": self.beats is not None,
        }

    def final(self) -> TaskEnd:
        """The task's state as the run ends, with its heartbeat latencies (report API), if it publishes any."""
        lat = self.beats.all() if self.beats is not None else np.zeros(0)
        latency: Latency | None = None
        if len(lat):
            q = np.percentile(lat, [50, 99])
            latency = {"p50": float(q[0]), "p99": float(q[1]), "max": float(lat.max()), "mean": float(lat.mean())}
        return {
            **self.state(),
            "end": self.end or "running at the end",
            "beats": int(len(lat)),
            "beats_lost": self.beats.lost if self.beats is not None and len(lat) else 0,
            "latency_ns": latency,
        }


class Affinity:
    """Journalled affinity: each thread's original CPUs recorded once, then moved freely."""

    def __init__(self, j: Journal) -> None:
        self.j = j
        self.journalled: set[int] = set()

    def set(self, p: Placed, cpus: list[int]) -> bool:
        """Move every thread of `p` to `cpus`; False if the process is gone."""
        want, moved = set(cpus), False
        for tid in threads(p.pid):
            sf = stat_fields(tid)
            if sf is None:
                continue
            if tid not in self.journalled:
                if set_affinity(self.j, tid, want, f"task.{p.pid}.affinity", sf[0]) is not None:
                    self.journalled.add(tid)
                moved = True
                continue
            try:
                os.sched_setaffinity(tid, want)
                moved = True
            except OSError:
                continue
        return moved


def start(j: Journal, argv: list[str], cpus: list[int], scratch: Path, n: int, env: dict[str, str]) -> Placed:
    """Start one command with its pages; its policy task is filled in by the engine."""
    page = PlacePage(scratch / f"place-{n}.page")
    rp = ReportPage.create(scratch / f"report-{n}.page")
    prog = programs.start(
        j, "task", argv, cpus, rp.path, scratch / f"task-{n}.log", env={**env, "JITTERSCOPE_PLACE_PAGE": str(page.path)}
    )
    return Placed(Task(prog.pid, prog.name), prog, page=page, report=rp, beats=Beats(rp.path))


def given(pid: int, option: str) -> Placed:
    prog = programs.given("task", pid, option)
    try:  # the program's name, not its comm (cut at 15 characters)
        prog.name = Path(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()).name or prog.name
    except (OSError, UnicodeDecodeError):
        pass
    return Placed(Task(pid, prog.name), prog)


def cgroup_pids(path: Path) -> list[int]:
    """Every process of a cgroup (v1 or v2), for --cgroup."""
    f = path / "cgroup.procs"
    try:
        pids = [int(x) for x in f.read_text().split()]
    except OSError as err:
        raise JitterscopeError(f"--cgroup {path}: cannot read {f}: {err.strerror}") from None
    if not pids:
        raise JitterscopeError(f"--cgroup {path}: no process in it")
    return pids


def describe_cpus(cpus: list[int]) -> str:
    return format_cpulist(sorted(cpus))
