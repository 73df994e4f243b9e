"""`tune audit`: the state of every isolation knob for the CPUs to isolate.

Each finding names the knob, its current value, the value recommended for an
isolated CPU, whether it is a boot, runtime, build or hardware setting, where it
was read, and a verdict: ok / not isolated / cannot tell, with why.  CPU sets
are compared normalised (units.py: lists, ranges and masks are one set).

boot      the kernel command line (isolcpus, nohz_full, rcu_nocbs, ...)
runtime   IRQs, workqueues, sysctls, THP, KSM, swap
tasks     kernel threads, user tasks, irqbalance, tuned, cpusets
machine   SMT siblings, cpufreq, idle states, clocksource, the kernel's build
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from jitterscope import sysinfo
from jitterscope.units import format_cpulist, possible_cpu_limit

OK, NOT, UNKNOWN = "ok", "not isolated", "cannot tell"


@dataclass
class Finding:
    group: str
    knob: str
    value: str
    recommended: str
    setting: str          # boot, runtime, build or hardware
    source: str           # how it was read
    verdict: str          # OK, NOT or UNKNOWN
    why: str
    fix: str | None = None  # the command or boot parameter that makes it ok


@dataclass
class Context:
    cpus: list[int]           # the CPUs to isolate
    housekeeping: list[int]   # the other online CPUs
    nr_cpus: int

    @property
    def cpus_text(self) -> str:
        return format_cpulist(self.cpus)

    @property
    def hk_text(self) -> str:
        return format_cpulist(self.housekeeping)

    def touches(self, cpus: list[int] | None) -> list[int]:
        return sorted(set(cpus or []) & set(self.cpus))


def make_context(cpus: list[int]) -> Context:
    online = sysinfo.online_cpus()
    return Context(sorted(cpus), [c for c in online if c not in cpus], possible_cpu_limit())


def audit(cpus: list[int]) -> dict[str, Any]:
    """Every finding for `cpus`, as plain data."""
    from jitterscope.tune.audit import boot, machine, runtime, tasks

    ctx = make_context(cpus)
    findings: list[Finding] = []
    for part in (boot, runtime, tasks, machine):
        findings.extend(part.findings(ctx))
    counts = {v: sum(f.verdict == v for f in findings) for v in (OK, NOT, UNKNOWN)}
    return {"host": sysinfo.host(), "kernel": sysinfo.kernel(), "virtualization": sysinfo.virtualization(),
            "cpus": ctx.cpus, "housekeeping": ctx.housekeeping, "counts": counts,
            "findings": [asdict(f) for f in findings]}
