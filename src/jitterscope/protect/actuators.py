"""How the controller suspends a best-effort CPU's work for S: one interface, six actuators.

| actuator  | suspends by                                                  | shortest Ts / S | needs                 |
|-----------|--------------------------------------------------------------|-----------------|-----------------------|
| rt        | the control thread (SCHED_FIFO, pinned there) spins for S    | 20us / 10us     | root or RLIMIT_RTPRIO |
|           | (the thesis's mechanism), within sched_rt_runtime_us         |                 |                       |
| deadline  | a SCHED_DEADLINE thread (runtime S, period Ts+S) spins for S | 20us / 20us     | the CPU in its own    |
|           |                                                              |                 | root domain           |
| sigstop   | SIGSTOP / SIGCONT to the best-effort processes (groups)      | 50us / 50us     | permission to signal  |
| freezer   | cgroup v2 cgroup.freeze (confirmed by cgroup.events) or v1   | 100us / 100us   | root, a freezer       |
|           | freezer.state FROZEN/THAWED                                  |                 |                       |
| cfs       | CFS bandwidth: quota Ts per period Ts+S (v2 cpu.max, v1      | 1ms / -         | root, a cpu cgroup    |
|           | cpu.cfs_quota_us) while over; the kernel's minimum is 1 ms   |                 |                       |
| mba       | resctrl MBA: the CPUs' memory bandwidth to its minimum       | 1ms / 1ms       | /sys/fs/resctrl + MBA |
| none      | nothing: measure and decide only (the "congested" baseline)  | 10us / 10us     |                       |

`prepare` sets up what an actuator needs (cgroups, the RT budget) through the
journal and returns the controller's options; everything is checked first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal
from jitterscope.protect import cgroups
from jitterscope.protect.programs import Program
from jitterscope.units import format_cpulist, format_ns

RT_RUNTIME = Path("/proc/sys/kernel/sched_rt_runtime_us")
RT_PERIOD = Path("/proc/sys/kernel/sched_rt_period_us")
RT_MARGIN = 0.03  # of a CPU, kept below the kernel's RT limit for sampling and the writer
RESCTRL = Path("/sys/fs/resctrl")


@dataclass(frozen=True)
class Actuator:
    name: str
    native: str
    min_ts_ns: float
    min_s_ns: float
    needs_root: bool
    doc: str


ACTUATORS = {
    a.name: a
    for a in (
        Actuator("rt", "rt", 20e3, 10e3, True, "SCHED_FIFO blocker thread spins on the CPU (thesis)"),
        Actuator("deadline", "deadline", 20e3, 20e3, True, "SCHED_DEADLINE blocker thread spins on the CPU"),
        Actuator("sigstop", "signal", 50e3, 50e3, False, "SIGSTOP/SIGCONT to the best-effort processes"),
        Actuator("freezer", "file", 100e3, 100e3, True, "cgroup freezer (v2 cgroup.freeze or v1 freezer.state)"),
        Actuator("cfs", "cfs", 1e6, 1.0, True, "CFS bandwidth quota Ts per Ts+S (cpu.max / cpu.cfs_quota_us)"),
        Actuator("mba", "file", 1e6, 1e6, True, "resctrl MBA: memory bandwidth to the minimum"),
        Actuator("none", "none", 10e3, 10e3, False, "no actuation: measure and decide only"),
    )
}


@dataclass
class Unit:
    """One best-effort CPU: its control thread, programs, report pages and actuator files."""

    cpu: int
    programs: list[Program] = field(default_factory=list)
    pages: list[Path] = field(default_factory=list)
    act_file: Path | None = None
    confirm_file: Path | None = None


def parse(text: str) -> tuple[str, int | None]:
    """`freezer`, `freezer:v1`, `cfs:v2`... -> (name, cgroup version or None)."""
    name, _, variant = text.partition(":")
    if name not in ACTUATORS:
        raise JitterscopeError(f"unknown actuator {text!r}: use {', '.join(ACTUATORS)}")
    if variant and (name not in ("freezer", "cfs") or variant not in ("v1", "v2")):
        raise JitterscopeError(f"actuator {text!r}: only freezer and cfs take a cgroup version (:v1 or :v2)")
    return name, int(variant[1]) if variant else None


def rt_budget() -> float:
    """The share of a CPU the RT blocker may take: the kernel's RT limit minus a margin."""
    try:
        runtime, period = int(RT_RUNTIME.read_text()), int(RT_PERIOD.read_text())
    except (OSError, ValueError):
        return 0.95 - RT_MARGIN
    share = 1.0 if runtime < 0 else runtime / period
    return min(share, 0.95) - RT_MARGIN


def check(name: str, ts_ns: float, s_ns: float) -> None:
    """Can `name` express Ts/S (S: the longest suspension the law asks for)?  One line if not."""
    a = ACTUATORS[name]
    if name == "mba" and not (RESCTRL / "info" / "MB").is_dir():
        raise JitterscopeError(
            "--actuator mba: no resctrl memory bandwidth allocation on this host "
            "(/sys/fs/resctrl/info/MB); use --actuator rt"
        )
    if a.needs_root and os.geteuid() != 0:
        raise JitterscopeError(
            f"the {name} actuator needs root (it changes scheduling or cgroups); "
            f"try --actuator sigstop on your own processes"
        )
    if name == "cfs" and ts_ns < 1e6:
        share = ts_ns / (ts_ns + s_ns)
        raise JitterscopeError(
            f"CFS bandwidth cannot express a {format_ns(ts_ns)} run time: its quota minimum is 1 ms; for the "
            f"same {share:.0%} share use --sample 1ms --suspend {format_ns(s_ns * 1e6 / ts_ns).replace(' ', '')}, "
            f"or --actuator rt"
        )
    if ts_ns < a.min_ts_ns:
        raise JitterscopeError(
            f"--sample {format_ns(ts_ns)} is below what the {name} actuator can do (at least {format_ns(a.min_ts_ns)})"
        )
    if s_ns < a.min_s_ns:
        raise JitterscopeError(
            f"--suspend {format_ns(s_ns)} is below what the {name} actuator can do (at least {format_ns(a.min_s_ns)})"
        )
    if name in ("rt", "deadline"):
        budget = rt_budget()
        if s_ns / (ts_ns + s_ns) > budget:
            raise JitterscopeError(
                f"suspending {format_ns(s_ns)} every {format_ns(ts_ns + s_ns)} ({s_ns / (ts_ns + s_ns):.0%} of the "
                f"CPU) exceeds the real-time budget ({budget:.0%}: kernel.sched_rt_runtime_us less a "
                f"{RT_MARGIN:.0%} margin); shorten --suspend"
            )


def prepare(
    j: Journal,
    name: str,
    version: int | None,
    units: list[Unit],
    given_cgroup: Path | None,
    ts_ns: float,
    s_max_ns: float,
) -> list[str]:
    """Set the actuator up (journalled) and return the controller's options for it."""
    native = ACTUATORS[name].native
    args = ["--actuator", native]
    if name == "rt":
        args += ["--rt-budget-ppm", str(int(rt_budget() * 1e6))]
    elif name == "sigstop":
        cgroups.stoppable(j, [(p.pid, p.group) for u in units for p in u.programs])
    elif name == "freezer":
        args += _freezer(j, version, units, given_cgroup)
    elif name == "cfs":
        args += _cfs(j, version, units, given_cgroup, max(1000, round((ts_ns + s_max_ns) / 1e3)))
    elif name == "mba":
        args += _mba(j, units)
    return args


def _own_groups(j: Journal, h: cgroups.Hierarchy, units: list[Unit]) -> list[Path]:
    groups = []
    for u in units:
        g = cgroups.create(j, h, f"jitterscope-protect-{os.getpid()}-cpu{u.cpu}")
        for p in u.programs:
            cgroups.move(j, h, g, p.pid)
        groups.append(g)
    return groups


def _control_files(
    j: Journal, controller: str, names: tuple[str, str], version: int | None, units: list[Unit], given: Path | None
) -> list[Path]:
    """Per unit, the file the actuator writes: names = (v2 file, v1 file) of `controller`, in the
    --best-effort-cgroup itself (one unit) or in a cgroup of our own per unit, programs moved in."""
    if given is not None:
        if len(units) != 1:
            raise JitterscopeError(
                f"--best-effort-cgroup with a {controller} actuator acts on the whole cgroup: "
                f"give one best-effort CPU (--cpus)"
            )
        found = [given / n for n in names if (given / n).exists()]
        if not found:
            raise JitterscopeError(f"--best-effort-cgroup {given}: no {' or '.join(names)} there")
        return found[:1]
    h = cgroups.find(controller, version)
    if h is None:
        raise JitterscopeError(
            f"no cgroup{' v' + str(version) if version else ''} {controller} controller is mounted here"
        )
    return [g / names[0 if h.version == 2 else 1] for g in _own_groups(j, h, units)]


def _freezer(j: Journal, version: int | None, units: list[Unit], given: Path | None) -> list[str]:
    files = _control_files(j, "freezer", ("cgroup.freeze", "freezer.state"), version, units, given)
    v2 = files[0].name == "cgroup.freeze"
    for u, f in zip(units, files):
        j.set_file(f, "0" if v2 else "THAWED")  # journals the original; a crash thaws it
        u.act_file = f
        u.confirm_file = f.parent / "cgroup.events" if v2 else f
    return [
        "--act-on",
        "1" if v2 else "FROZEN",
        "--act-off",
        "0" if v2 else "THAWED",
        "--confirm-expect",
        "frozen 1" if v2 else "FROZEN",
    ]


def _cfs(j: Journal, version: int | None, units: list[Unit], given: Path | None, period_us: int) -> list[str]:
    """Period Ts+S (S: the longest suspension) set once, quota written by the controller; both journalled."""
    files = _control_files(j, "cpu", ("cpu.max", "cpu.cfs_quota_us"), version, units, given)
    v2 = files[0].name == "cpu.max"
    for u, f in zip(units, files):
        if v2:
            j.set_file(f, f"max {period_us}")
        else:
            j.set_file(f, "-1")
            j.set_file(f.parent / "cpu.cfs_period_us", str(period_us))
        u.act_file = f
    return [
        "--cfs-period-us",
        str(period_us),
        "--act-on",  # what follows the quota the controller writes: cpu.max takes "QUOTA PERIOD"
        f" {period_us}" if v2 else "",
        "--act-off",
        f"max {period_us}" if v2 else "-1",
    ]


def _mba(j: Journal, units: list[Unit]) -> list[str]:

    g = RESCTRL / f"jitterscope-protect-{os.getpid()}"
    j.begin("rmdir", path=str(g))
    g.mkdir()
    (g / "cpus_list").write_text(format_cpulist([u.cpu for u in units]))
    lo = (RESCTRL / "info" / "MB" / "min_bandwidth").read_text().strip()
    domains = [ln.split(":", 1)[1] for ln in (g / "schemata").read_text().splitlines() if ln.strip().startswith("MB:")]
    ids = [d.split("=")[0] for d in ";".join(domains).split(";") if "=" in d]
    for u in units:
        u.act_file = g / "schemata"
    return [
        "--act-on",
        "MB:" + ";".join(f"{i}={lo}" for i in ids),
        "--act-off",
        "MB:" + ";".join(f"{i}=100" for i in ids),
    ]
