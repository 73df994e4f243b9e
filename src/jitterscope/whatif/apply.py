"""`whatif dvfs --apply`: the recorded program run again on real frequencies (cpufreq.py), once pinned at
the nominal factor 1.0 and once under the A.7 controller driven online, and the two wall times compared.

The online controller reads, every period P, each thread's run-queue wait from /proc/PID/task/TID/schedstat
(time it was runnable but others ran: the jitter a guest or host can see) and the CPU it last ran on.
Having run P - lost at factor f, the thread did (P - lost) x f of nominal work, so its jitter count
becomes J + P - (P - lost) x f (A.7's J += T - tau(f0) with T = P); the next factor is the controller's
choice for tau(f0) = P.  A CPU runs at the highest factor any of its threads asks for.  P is the
subframe, or 10x the policy's transition latency when that is longer (a limit change is a sysfs write,
not the paper's 10 us PLL lock), and at least 1 ms.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from jitterscope import childgroup
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal
from jitterscope.ownenv import program_environ
from jitterscope.whatif import cpufreq
from jitterscope.whatif.controller import Controller
from jitterscope.whatif.results import DvfsApply


def _threads(pid: int) -> dict[int, tuple[int, int]]:
    """tid -> (run-queue wait ns, last CPU) of every thread of pid."""
    out = {}
    for t in Path(f"/proc/{pid}/task").iterdir() if Path(f"/proc/{pid}/task").exists() else []:
        try:
            delay = int((t / "schedstat").read_text().split()[1])
            stat = (t / "stat").read_text()
            cpu = int(stat[stat.rindex(")") + 2 :].split()[36])
        except (OSError, ValueError, IndexError):
            continue
        out[int(t.name)] = (delay, cpu)
    return out


class Online:
    """The controller of every thread of the running program; per CPU the highest factor."""

    def __init__(
        self, ctl: Controller, limits: cpufreq.Limits, fmap: dict[int, dict[float, int]], period_ns: float
    ) -> None:
        self.ctl, self.limits, self.fmap, self.period = ctl, limits, fmap, period_ns
        self.j: dict[int, float] = {}
        self.f: dict[int, float] = {}
        self.last: dict[int, int] = {}
        self.cpu_f = {cpu: 1.0 for cpu in fmap}
        self.weighted = {cpu: 0.0 for cpu in fmap}  # sum factor^3 x time, per CPU
        self.time = 0.0

    def tick(self, pid: int, elapsed_ns: float) -> None:
        want: dict[int, float] = {}
        for tid, (delay, cpu) in _threads(pid).items():
            lost = min(max(delay - self.last.get(tid, delay), 0), elapsed_ns)
            self.last[tid] = delay
            j = self.j.get(tid, 0.0) + elapsed_ns - (elapsed_ns - lost) * self.f.get(tid, 1.0)
            self.j[tid] = j
            self.f[tid] = f = self.ctl.choose(self.period, j)
            if cpu in self.fmap:
                want[cpu] = max(want.get(cpu, self.ctl.table[0]), f)
        for cpu in self.fmap:
            self.weighted[cpu] += self.cpu_f[cpu] ** 3 * elapsed_ns
            self.cpu_f[cpu] = want.get(cpu, 1.0)
            self.limits.set(cpu, self.fmap[cpu][self.cpu_f[cpu]])
        self.time += elapsed_ns


def _run(cmd: list[str], journal: Journal, online: Online | None) -> float:
    t0 = time.perf_counter()
    try:
        proc = childgroup.popen(cmd, env=program_environ())
    except OSError as err:
        raise JitterscopeError(
            f"--apply: cannot run the recorded program {cmd[0]!r} ({err.strerror or err}); "
            "run from the directory it was recorded in"
        ) from None
    journal.process_group(proc.pid)
    last = time.perf_counter()
    while proc.poll() is None:
        time.sleep(online.period / 1e9 if online else 0.01)
        now = time.perf_counter()
        if online is not None:
            online.tick(proc.pid, (now - last) * 1e9)
        last = now
    return time.perf_counter() - t0


def apply(cmd: list[str], cpus: list[int], ctl: Controller, subframe_ns: int, nominal_khz: int | None) -> DvfsApply:
    """Run `cmd` pinned at nominal, then under the online controller; or why it cannot be done here."""
    pols, why = cpufreq.policies(cpus)
    base, stand_in = cpufreq.root()
    if why:
        return {"status": f"skipped: {why}", "stand_in": stand_in}
    fmap = {p.cpu: cpufreq.frequency_map(ctl.table, p, nominal_khz) for p in pols}
    period = max(float(subframe_ns), 10.0 * max(p.transition_ns for p in pols), 1e6)
    with Journal("whatif-dvfs-apply") as journal:
        limits = cpufreq.Limits(journal, pols)
        for p in pols:
            limits.set(p.cpu, fmap[p.cpu][1.0])
        nominal_s = _run(cmd, journal, None)
        online = Online(ctl, limits, fmap, period)
        controlled_s = _run(cmd, journal, online)
        changes = limits.changes
    power = {cpu: (w / online.time if online.time else 1.0) - 1.0 for cpu, w in online.weighted.items()}
    note = (
        (
            f"STAND-IN cpufreq root {base} ({cpufreq.ROOT_ENV}): the frequencies written there change nothing on "
            "this machine; the two run times differ by noise only"
        )
        if stand_in
        else None
    )
    return {
        "status": "applied",
        "stand_in": stand_in,
        "root": str(base),
        "note": note,
        "period_ns": period,
        "frequencies_khz": {str(cpu): {f"{x:g}": k for x, k in m.items()} for cpu, m in fmap.items()},
        "nominal_s": nominal_s,
        "controlled_s": controlled_s,
        "limit_changes": changes,
        "power": power,
        "cwd": os.getcwd(),
    }
