"""The machine and the kernel's build: SMT siblings, cpufreq, idle states, clocksource, tick, preemption."""

from __future__ import annotations

from pathlib import Path

from jitterscope import sysinfo
from jitterscope.tune import kconfig
from jitterscope.tune.audit.finding import NOT, OK, UNKNOWN, Context, Finding
from jitterscope.units import format_cpulist, parse_cpulist

CPU = Path("/sys/devices/system/cpu")


def _read(p: Path) -> str | None:
    try:
        return p.read_text().strip()
    except OSError:
        return None


def _per_cpu(ctx: Context) -> list[Finding]:
    out = []
    for c in ctx.cpus:
        sib = _read(CPU / f"cpu{c}/topology/thread_siblings_list")
        others = [s for s in parse_cpulist(sib) if s != c] if sib else []
        shared = [s for s in others if s not in ctx.cpus]
        out.append(
            Finding(
                "hardware",
                f"cpu{c} SMT siblings",
                format_cpulist(others) or "none",
                "none, or isolated too",
                "hardware",
                f"cpu{c}/topology/thread_siblings_list",
                UNKNOWN if sib is None else (NOT if shared else OK),
                "topology not readable"
                if sib is None
                else (
                    f"shares its core with housekeeping CPU {format_cpulist(shared)}"
                    if shared
                    else "no sibling does other work"
                ),
                "nosmt, or isolate the siblings too" if shared else None,
            )
        )
        gov = _read(CPU / f"cpu{c}/cpufreq/scaling_governor")
        out.append(
            Finding(
                "hardware",
                f"cpu{c} cpufreq governor",
                gov or "no cpufreq",
                "performance",
                "runtime",
                f"cpu{c}/cpufreq/scaling_governor",
                UNKNOWN if gov is None else (OK if gov == "performance" else NOT),
                "no cpufreq here: the host or firmware sets the frequency"
                if gov is None
                else (
                    "fixed at the highest frequency"
                    if gov == "performance"
                    else f"{gov} changes the frequency under load (and runs its own work)"
                ),
                f"echo performance > {CPU}/cpu{c}/cpufreq/scaling_governor"
                if gov not in (None, "performance")
                else None,
            )
        )
        states = sorted((CPU / f"cpu{c}/cpuidle").glob("state*")) if (CPU / f"cpu{c}/cpuidle").is_dir() else []
        deep = [
            f"{_read(s / 'name')} ({_read(s / 'latency')} us)"
            for s in states
            if _read(s / "disable") == "0" and int(_read(s / "latency") or 0) > 10
        ]
        out.append(
            Finding(
                "hardware",
                f"cpu{c} idle states",
                ", ".join(deep)
                or (
                    "none deeper than 10 us"
                    if states
                    else f"none (driver {_read(CPU / 'cpuidle/current_driver') or '?'})"
                ),
                "none deeper than 10 us",
                "runtime",
                f"cpu{c}/cpuidle/state*/",
                NOT if deep else (OK if states else UNKNOWN),
                "waking from these adds their exit latency when the workload idles"
                if deep
                else (
                    "no deep state enabled"
                    if states
                    else "no cpuidle states: the CPU halts and the host or firmware decides"
                ),
                "disable them: echo 1 > .../cpuidle/stateN/disable" if deep else None,
            )
        )
    return out


def _build() -> list[Finding]:
    _, src = kconfig.read()
    where = src or "(kernel config not readable)"
    hz, preempt = kconfig.hz(), kconfig.preemption()
    nohz, nocb = kconfig.enabled("CONFIG_NO_HZ_FULL"), kconfig.enabled("CONFIG_RCU_NOCB_CPU")
    cs = sysinfo.clocksource()
    return [
        Finding(
            "kernel",
            "clocksource",
            cs,
            "tsc",
            "runtime",
            "clocksource0/current_clocksource",
            OK if cs == "tsc" else NOT,
            "reading the time costs no exit" if cs == "tsc" else f"{cs} may cost more per read (or a VM exit)",
        ),
        Finding(
            "kernel",
            "CONFIG_HZ",
            str(hz) if hz else "?",
            "(any; the tick stops with nohz_full)",
            "build",
            where,
            UNKNOWN if hz is None else OK,
            f"the tick fires {hz} times a second on a busy CPU unless nohz_full stops it"
            if hz
            else "kernel config not readable",
        ),
        Finding(
            "kernel",
            "preemption model",
            preempt or "?",
            "(matches the workload)",
            "build",
            where,
            UNKNOWN if preempt is None else OK,
            "how soon the kernel yields to a woken task",
        ),
        Finding(
            "kernel",
            "CONFIG_NO_HZ_FULL",
            {True: "y", False: "n", None: "?"}[nohz],
            "y",
            "build",
            where,
            UNKNOWN if nohz is None else (OK if nohz else NOT),
            "nohz_full= can stop the tick"
            if nohz
            else "nohz_full= is ignored: the tick cannot stop on a busy CPU without another kernel",
        ),
        Finding(
            "kernel",
            "CONFIG_RCU_NOCB_CPU",
            {True: "y", False: "n", None: "?"}[nocb],
            "y",
            "build",
            where,
            UNKNOWN if nocb is None else (OK if nocb else NOT),
            "rcu_nocbs= can offload RCU callbacks"
            if nocb
            else "rcu_nocbs= is ignored: RCU callbacks stay on every CPU",
        ),
    ]


def findings(ctx: Context) -> list[Finding]:
    return _per_cpu(ctx) + _build()
