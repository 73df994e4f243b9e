"""Who may run on the CPUs: kernel threads, user tasks, irqbalance, tuned, cpusets."""

from __future__ import annotations

import os
from pathlib import Path

from jitterscope.knobs import tasks
from jitterscope.tune.audit.finding import NOT, OK, UNKNOWN, Context, Finding
from jitterscope.units import format_cpulist, parse_cpulist, parse_cpumask

SHOWN = 6  # names listed in a finding's value


def _names(ts: list[tasks.Task]) -> str:
    names = sorted({f"{t.comm}({t.pid})" for t in ts})
    return ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _task_findings(ctx: Context) -> list[Finding]:
    mine = os.getpid()
    allowed = [t for t in tasks.tasks() if ctx.touches(t.allowed) and t.pid != mine]
    bound = [t for t in allowed if t.kthread and not t.movable]
    kmov = [t for t in allowed if t.kthread and t.movable]
    user = [t for t in allowed if not t.kthread]
    return [
        Finding(
            "tasks",
            "per-CPU kernel threads",
            _names(bound) or "none",
            "(cannot move)",
            "runtime",
            "/proc/*/stat",
            OK,
            f"{len({t.pid for t in bound})} bound to their CPU by the kernel; what wakes each is removed "
            "by other knobs (kernel-per-CPU-kthreads.rst)",
        ),
        Finding(
            "tasks",
            "kernel threads allowed on them",
            _names(kmov) or "none",
            "none",
            "runtime",
            "/proc/*/status Cpus_allowed",
            NOT if kmov else OK,
            f"{len({t.pid for t in kmov})} movable kernel threads may run there" if kmov else "none",
            f"kthread_cpus={ctx.hk_text} at boot, or jitterscope tune apply --knob task.PID.affinity={ctx.hk_text}"
            if kmov
            else None,
        ),
        Finding(
            "tasks",
            "user tasks allowed on them",
            _names(user) or "none",
            "only the workload",
            "runtime",
            "/proc/*/status Cpus_allowed",
            NOT if user else OK,
            f"{len({t.pid for t in user})} processes may be scheduled there" if user else "none",
            f"systemd CPUAffinity={ctx.hk_text} (system.conf), a cpuset, or jitterscope tune apply "
            f"--knob task.PID.affinity={ctx.hk_text}"
            if user
            else None,
        ),
    ]


def _process(comm: str) -> int | None:
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (sf := tasks.stat_fields(d.name)) and sf[0] == comm:
            return int(d.name)
    return None


def _irqbalance_banned(pid: int) -> list[int] | None:
    env: dict[str, str] = {}
    for f in (Path("/etc/default/irqbalance"), Path("/etc/sysconfig/irqbalance")):
        try:
            for line in f.read_text().splitlines():
                k, eq, v = line.strip().partition("=")
                if eq and not k.startswith("#"):
                    env[k] = v.strip("\"'")
        except OSError:
            pass
    try:
        for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            k, eq, v = item.decode(errors="replace").partition("=")
            if eq:
                env[k] = v
    except OSError:
        pass
    if env.get("IRQBALANCE_BANNED_CPULIST"):
        return parse_cpulist(env["IRQBALANCE_BANNED_CPULIST"])
    if env.get("IRQBALANCE_BANNED_CPUS"):
        return parse_cpumask(env["IRQBALANCE_BANNED_CPUS"])
    return None


def _daemons(ctx: Context) -> list[Finding]:
    out = []
    pid = _process("irqbalance")
    if pid is None:
        out.append(
            Finding(
                "services",
                "irqbalance",
                "not running",
                "not running, or banning them",
                "runtime",
                "/proc/*/stat",
                OK,
                "nothing moves IRQs back behind jitterscope's back",
            )
        )
    else:
        banned = _irqbalance_banned(pid) or []
        ok = set(ctx.cpus) <= set(banned)
        out.append(
            Finding(
                "services",
                "irqbalance",
                f"running (pid {pid}), banned CPUs: {format_cpulist(banned) or 'none'}",
                f"IRQBALANCE_BANNED_CPULIST={ctx.cpus_text}",
                "runtime",
                f"/proc/{pid}/environ, /etc/default/irqbalance",
                OK if ok else NOT,
                "it keeps IRQs off them" if ok else "it will move IRQs back onto them",
                None if ok else f"IRQBALANCE_BANNED_CPULIST={ctx.cpus_text} in /etc/default/irqbalance",
            )
        )
    pid = _process("tuned")
    try:
        profile = Path("/etc/tuned/active_profile").read_text().strip()
    except OSError:
        profile = "?"
    out.append(
        Finding(
            "services",
            "tuned",
            f"running (pid {pid}), profile {profile}" if pid else "not running",
            "not running, or a profile that agrees",
            "runtime",
            "/proc/*/stat, /etc/tuned/active_profile",
            UNKNOWN if pid else OK,
            "it re-applies its profile: make sure it agrees with these changes"
            if pid
            else "nothing re-applies other settings",
        )
    )
    return out


def _cgroup2_roots() -> list[Path]:
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return []
    return [Path(ln.split()[1]) for ln in lines if len(ln.split()) > 2 and ln.split()[2] == "cgroup2"]


def _cpusets(ctx: Context) -> Finding:
    for root in _cgroup2_roots():
        try:
            if "cpuset" not in (root / "cgroup.controllers").read_text().split():
                continue
            parts = [(p.parent, p.read_text().strip()) for p in root.rglob("cpuset.cpus.partition")]
        except OSError:
            continue
        iso = {
            c
            for d, kind in parts
            if kind.startswith("isolated")
            for c in parse_cpulist((d / "cpuset.cpus.effective").read_text().strip() or "0")
        }
        ok = set(ctx.cpus) <= iso
        return Finding(
            "cpusets",
            "cpuset.cpus.partition",
            f"isolated: {format_cpulist(sorted(iso)) or 'none'}",
            f"an isolated partition of {ctx.cpus_text}",
            "runtime",
            f"{root}/**/cpuset.cpus.partition",
            OK if ok else NOT,
            "in an isolated partition: no load balancing, timers or unbound work"
            if ok
            else "no isolated partition holds them (cgroup v2, kernel >= 5.15: cpu-isolation)",
            None if ok else f"echo isolated > SOMECGROUP/cpuset.cpus.partition with cpus {ctx.cpus_text}",
        )
    v1 = Path("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance")
    if v1.exists():
        lb = v1.read_text().strip()
        return Finding(
            "cpusets",
            "cpuset (cgroup v1)",
            f"root sched_load_balance={lb}",
            "v2 isolated partition",
            "runtime",
            str(v1),
            UNKNOWN,
            "cgroup v1 cpusets: no isolated partitions here (the cpuset "
            "controller is not on cgroup v2); isolcpus=domain is the boot-time equivalent",
        )
    return Finding(
        "cpusets",
        "cpusets",
        "none",
        "an isolated partition",
        "runtime",
        "/proc/mounts",
        UNKNOWN,
        "no cpuset controller mounted",
    )


def findings(ctx: Context) -> list[Finding]:
    return _task_findings(ctx) + _daemons(ctx) + [_cpusets(ctx)]
