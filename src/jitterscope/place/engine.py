"""The placement loop: observe every task each quantum, apply the policies, enforce their decisions.

Two modes.  With OBS-L (or the forced `worst` case) the loop is a user-level
scheduler (spec B.3 (b)): every task is pinned to one CPU, exactly one task per
CPU runs at a time and the others are stopped (actuate.py); when a CPU's
quantum ends it observes the task that ran and picks the next one (policy.choose)
knowing what runs on the other CPUs of its LLC group, so quanta of different
CPUs need not line up (OBS-C lengthens and shortens them).  Without it, the
kernel schedules and the loop observes every task once per quantum.  OBS-X
places tasks and rebalances every period, OBS-F reacts to faults at once (the
fault FIFO wakes the loop) and at the end of each quantum.  Every decision is
recorded with its reason; a task that ends or vanishes is dropped and logged.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from jitterscope.place import observe, policy
from jitterscope.place.actuate import Actuator
from jitterscope.place.raw import STATE_EVERY_NS, RawWriter
from jitterscope.place.results import Decision, Observation
from jitterscope.place.tasks import Affinity, Placed
from jitterscope.place.topology import Topology


@dataclass
class Config:
    policies: frozenset[str]
    settings: policy.Settings
    cpus: list[int]
    dry_run: bool = False
    on_decision: Callable[[Decision], None] | None = None

    @property
    def slots(self) -> bool:
        return bool(self.policies & {"L", "worst"})


@dataclass
class Slot:
    task: Placed | None
    start: int
    end: int


@dataclass
class Engine:
    cfg: Config
    topo: Topology
    tasks: list[Placed]
    aff: Affinity | None
    act: Actuator | None
    fifo: int | None = None
    t0: int = field(default_factory=time.monotonic_ns)
    raw: RawWriter = field(default_factory=lambda: RawWriter(None))  # what it sees goes there, not to memory
    slot: dict[int, Slot] = field(default_factory=dict)

    # --- bookkeeping ----------------------------------------------------------------------------------------
    def now(self) -> int:
        return time.monotonic_ns() - self.t0

    def live(self) -> list[Placed]:
        return [p for p in self.tasks if not p.end]

    def decide(self, policy_: str, p: Placed | None, action: str, cpu: int, reason: str, value: float = 0.0) -> None:
        d: Decision = {
            "t_ns": self.now(),
            "policy": policy_,
            "pid": p.pid if p else -1,
            "name": p.t.name if p else "",
            "action": action,
            "cpu": cpu,
            "value": float(value),
            "reason": reason,
        }
        self.raw.decision(d)
        if self.cfg.on_decision:
            self.cfg.on_decision(d)

    def free(self, p: Placed) -> bool:
        """OBS-P: a protected task is never stopped; it shares its CPU with the slot's task under the kernel."""
        return "P" in self.cfg.policies and p.protected

    def wmax(self) -> float:
        return max([p.t.weight for p in self.tasks] + [1e-12])

    def group_cpus(self, g: int) -> list[int]:
        return [c for c in self.topo.groups[g] if c in self.cfg.cpus]

    def move(self, p: Placed, cpus: list[int]) -> None:
        if self.aff is not None and not self.cfg.dry_run:
            self.aff.set(p, cpus)

    def base_cpus(self, p: Placed) -> list[int]:
        """Where the policies (not OBS-F) want the task: its CPU, or with OBS-X alone its group or anywhere."""
        if self.cfg.slots or "X" not in self.cfg.policies:
            return [p.t.home]
        g = self.topo.group_of(p.t.home)
        mates = [q.t for q in self.live() if self.topo.group_of(q.t.home) == g]
        return self.group_cpus(g) if policy.overweight(p.t, mates) else list(self.cfg.cpus)

    # --- observation ----------------------------------------------------------------------------------------
    def observe(self, p: Placed, cpu: int | None = None) -> Observation | None:
        """The task's last quantum as an observation row (weight updated); None if it is gone (dropped)."""
        t = time.perf_counter_ns()
        snap = observe.snapshot(p.pid, p.page, p.report, p.pmu) if p.prog.alive() else None
        self.raw.cost(time.perf_counter_ns() - t)  # OBS-M's overhead
        if p.beats is not None:
            p.beats.read()
        if snap is None or p.snap is None:
            if snap is None:
                self.drop(p)
            return None
        w, src = observe.weight(p.snap, snap, p.declared, p.source)
        now = self.now()
        row = observe.row(p.pid, p.t.name, p.snap_ns, now, p.snap, snap, w, src, snap.cpu if cpu is None else cpu)
        p.t.weight, p.t.prio, p.snap, p.snap_ns = w, snap.nice, snap, now
        self.raw.observation(row)
        return row

    def drop(self, p: Placed) -> None:
        rc = p.prog.returncode()
        p.end = (
            "killed by SIGILL (the emulated fault; OBS-F is off)"
            if rc == -4
            else f"killed by signal {-rc}"
            if rc is not None and rc < 0
            else f"ended (exit code {rc})"
            if rc is not None
            else "vanished"
        )
        self.decide("-", p, "drop", -1, p.end)
        observe.forget(p.pid)
        for s in self.slot.values():
            if s.task is p:
                s.task = None

    # --- OBS-F ----------------------------------------------------------------------------------------------
    def faults(self) -> None:
        for p in self.live():
            n = (p.page.counters()["faults"] if p.page else 0) - p.t.f.faults
            if n > 0 and policy.f_fault(p.t, n) == "pin":
                self.f_move(p, "pin", self.least_loaded(self.topo.big), f"{n} fault(s) on a LITTLE CPU")

    def least_loaded(self, cpus: list[int]) -> int:
        cands = [c for c in cpus if c in self.cfg.cpus] or cpus
        return min(cands, key=lambda c: (sum(q.t.home == c for q in self.live()), c))

    def f_move(self, p: Placed, action: str, cpu: int, reason: str) -> None:
        running = next((c for c, s in self.slot.items() if s.task is p), None)
        if running is not None:
            self.end_slot(running)
        if action == "pin":
            p.f_home, p.t.home = p.t.home, cpu
        elif action == "release":
            p.t.home = p.f_home if p.f_home >= 0 else cpu
        self.move(p, [p.t.home] if action != "release" or self.cfg.slots else self.base_cpus(p))
        self.decide("F", p, action, p.t.home, reason)
        if running is not None:
            self.next_slot(running)

    def f_quantum(self, p: Placed, row: Observation) -> None:
        if "F" not in self.cfg.policies:
            return
        act = policy.f_quantum(p.t, row["faults"] > 0, self.cfg.settings)
        if act == "ban":
            self.decide("F", p, "ban", p.t.home, f"{p.t.f.faulting_quanta} faulting quanta: off LITTLE CPUs for good")
        elif act == "release":
            self.f_move(p, "release", p.t.home, f"{p.t.f.clean_quanta} quantum(s) without special instructions")

    # --- OBS-L / worst and OBS-C: one CPU's quantum ---------------------------------------------------------
    def end_slot(self, cpu: int) -> None:
        s = self.slot.get(cpu)
        if s is None or s.task is None:
            return
        p, now = s.task, self.now()
        s.task = None
        s.end = min(s.end, now)
        if self.act is not None and not self.cfg.dry_run:
            self.act.stop(p)
        row = self.observe(p, cpu)
        if row is None:
            return
        if "C" in self.cfg.policies:
            g = self.topo.group_of(cpu)
            for c, o in self.slot.items():
                if c != cpu and o.task is not None and self.topo.group_of(c) == g and o.start < now:
                    moved = policy.transfer(
                        p.t, o.task.t, now - max(row["start_ns"], o.start), self.cfg.settings, self.wmax()
                    )
                    if moved > 0:
                        light, heavy = (p, o.task) if p.t.weight < o.task.t.weight else (o.task, p)
                        self.decide(
                            "C",
                            light,
                            "credit",
                            cpu,
                            f"co-ran with the heavier {heavy.t.name} ({heavy.pid}), which pays",
                            moved,
                        )
        self.f_quantum(p, row)

    def next_slot(self, cpu: int) -> None:
        now, g = self.now(), self.topo.group_of(cpu)
        queue = [
            p
            for p in self.live()
            if p.t.home == cpu and not self.free(p) and not any(s.task is p for s in self.slot.values())
        ]
        co = [s.task for c, s in self.slot.items() if s.task and c != cpu and self.topo.group_of(c) == g]
        co += [p for p in self.live() if self.free(p) and self.topo.group_of(p.t.home) == g]
        others = sum(q.t.weight for q in co)
        mates = [p.t.weight for p in self.live() if self.topo.group_of(p.t.home) == g]
        goal = policy.target(mates, len(self.group_cpus(g)))
        guard = "P" in self.cfg.policies and any(q.protected for q in co)
        pick, why = policy.choose(
            [p.t for p in queue],
            others,
            0.0 if guard else goal,
            self.wmax(),
            self.cfg.settings.bins,
            worst="worst" in self.cfg.policies,
        )
        if guard:  # OBS-P: a protected task's noise is the objective: its co-runners as light as can be
            why += f" (OBS-P: the protected {next(q.t.name for q in co if q.protected)} co-runs: lightest first)"
        chosen = next((p for p in queue if p.t is pick), None)
        length = int(self.cfg.settings.quantum_ns)
        if chosen is not None:
            chosen.t.ran_epoch, chosen.t.last_ran_ns = True, now
            if "C" in self.cfg.policies:
                length = int(policy.slot_ns(chosen.t, self.cfg.settings))
                chosen.t.credit_ns -= length - self.cfg.settings.quantum_ns
            if self.act is not None and not self.cfg.dry_run:
                self.act.cont(chosen)
            chosen.snap_ns = now
            self.decide("worst" if "worst" in self.cfg.policies else "L", chosen, "run", cpu, why, length)
        # On the grid of the CPU's previous quantum (CPUs stay aligned however late the loop wakes),
        # unless more than a quantum behind.
        prev = self.slot.get(cpu)
        base = prev.end if prev is not None and now - prev.end < self.cfg.settings.quantum_ns else now
        self.slot[cpu] = Slot(chosen, now, base + length)

    # --- OBS-X ----------------------------------------------------------------------------------------------
    def groups(self) -> list[list[Placed]]:
        return [[p for p in self.live() if self.topo.group_of(p.t.home) == g] for g in range(len(self.topo.groups))]

    def rebalance(self) -> None:
        move = policy.rebalance([[p.t for p in g] for g in self.groups()])
        if move is None:
            return
        t, hi, lo = move
        p = next(q for q in self.live() if q.t is t)
        running = next((c for c, s in self.slot.items() if s.task is p), None)
        if running is not None:
            self.end_slot(running)
        p.t.home = self.least_loaded(self.group_cpus(lo))
        self.move(p, self.base_cpus(p))
        self.decide(
            "X",
            p,
            "migrate",
            p.t.home,
            f"overweight ({t.weight:.3g}) in the heaviest group {hi}; to the lightest group {lo}",
            t.weight,
        )
        if running is not None:
            self.next_slot(running)

    def keep_overweight(self) -> None:
        """OBS-X without OBS-L: overweight tasks stay in their group, the others may go anywhere."""
        for p in self.live():
            want = self.base_cpus(p)
            if sorted(want) != sorted(p.base_cpus) and not p.t.f.pinned:
                self.move(p, want)
                self.decide(
                    "X",
                    p,
                    "keep" if len(want) < len(self.cfg.cpus) else "free",
                    p.t.home,
                    "overweight: kept in its group"
                    if len(want) < len(self.cfg.cpus)
                    else "not overweight: free to migrate",
                    p.t.weight,
                )
                p.base_cpus = want

    # --- the loop -------------------------------------------------------------------------------------------
    def record(self, now: int, every_ns: int = STATE_EVERY_NS) -> None:
        """The loop turn's records to the kernel (a kill loses no more), the tasks' states once a second."""
        if now - self.raw.state_ns >= every_ns:
            self.raw.states(now, [p.state() for p in self.tasks])
        self.raw.flush()

    def run(self, duration_ns: float, stopping: Callable[[], bool]) -> str:
        """For `duration_ns` from now (the tasks' start-up, which a busy machine makes long, is not part of
        it), until the last task's end or `stopping()`; says which."""
        s = self.cfg.settings
        deadline = self.now() + duration_ns
        for p in self.live():
            p.snap, p.snap_ns = observe.snapshot(p.pid, p.page, p.report, p.pmu), self.now()
            p.first, p.first_ns = p.snap, p.snap_ns
            if p.beats is not None:  # iterations before the run's start do not count
                p.beats.read()
                p.beats.latencies.clear()
        if self.cfg.slots:
            for p in self.live():
                if self.act is not None and not self.cfg.dry_run and not self.free(p):
                    self.act.stop(p)
            for c in self.cfg.cpus:
                self.next_slot(c)
        self.record(self.now(), every_ns=0)
        tick, rebal = self.now() + s.quantum_ns, self.now() + s.period_ns
        while True:
            now = self.now()
            if now >= deadline:
                return "duration"
            if not self.live():
                return "tasks ended"
            if stopping():
                return "interrupted"
            free = [p for p in self.live() if self.free(p)]
            wake = min([sl.end for sl in self.slot.values()] + ([tick] if free else []) if self.cfg.slots else [tick])
            wake = min(wake, rebal if "X" in self.cfg.policies else wake, deadline)
            ready = select.select([self.fifo] if self.fifo is not None else [], [], [], max(0, wake - now) / 1e9)[0]
            if ready:
                os.read(self.fifo, 4096)  # type: ignore[arg-type]
                self.faults()
            now = self.now()
            if self.cfg.slots:
                for c in sorted(self.slot, key=lambda c: self.slot[c].end):
                    if self.slot[c].end <= now:
                        self.end_slot(c)
                        self.next_slot(c)
            if now >= tick and (free or not self.cfg.slots):
                for p in free if self.cfg.slots else self.live():
                    row = self.observe(p)
                    if row is not None:
                        self.f_quantum(p, row)
                if "X" in self.cfg.policies:
                    self.keep_overweight()
                tick += s.quantum_ns
            if "X" in self.cfg.policies and now >= rebal:
                self.rebalance()
                rebal += s.period_ns
            if "X" in self.cfg.policies:
                self.raw.split(now, policy.balanced([[p.t for p in g] for g in self.groups()]))
            self.record(now)

    def finish(self) -> None:
        """Observe the tasks still in a quantum and let every task run again."""
        for c in list(self.slot):
            self.end_slot(c)
        for p in self.live():
            # gone (or a zombie) since its last quantum, e.g. killed while stopped: not "running at the end"
            if not p.prog.alive() or observe.snapshot(p.pid, p.page, p.report, p.pmu) is None:
                self.drop(p)
        observe.forget()
        if self.act is not None:
            for p in self.tasks:
                self.act.cont(p)
