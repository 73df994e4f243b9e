"""`tune audit`: the state of every isolation knob for the CPUs to isolate.

Each finding names the knob, its current value, the value recommended for an
isolated CPU, whether it is a boot, runtime, build or hardware setting, where it
was read, and a verdict: ok / not isolated / cannot tell, with why.  CPU sets
are compared normalised (units.py: lists, ranges and masks are one set).

finding   Finding (one knob's value, recommendation and verdict) and the Context every part reads
boot      the kernel command line (isolcpus, nohz_full, rcu_nocbs, ...)
runtime   IRQs, workqueues, sysctls, THP, KSM, swap
tasks     kernel threads, user tasks, irqbalance, tuned, cpusets
machine   SMT siblings, cpufreq, idle states, clocksource, the kernel's build
"""

from __future__ import annotations

from typing import TypedDict

from jitterscope import sysinfo
from jitterscope.tune.audit import boot, machine, runtime, tasks
from jitterscope.tune.audit.finding import NOT, OK, UNKNOWN, Finding, make_context


class FindingJson(TypedDict):
    """A Finding as `tune audit --json` prints it."""

    group: str
    knob: str
    value: str
    recommended: str
    setting: str
    source: str
    verdict: str
    why: str
    fix: str | None


class Audit(TypedDict):
    host: str
    kernel: str
    virtualization: str | None
    cpus: list[int]
    housekeeping: list[int]
    counts: dict[str, int]  # findings per verdict
    findings: list[FindingJson]


def _json(f: Finding) -> FindingJson:
    return {
        "group": f.group,
        "knob": f.knob,
        "value": f.value,
        "recommended": f.recommended,
        "setting": f.setting,
        "source": f.source,
        "verdict": f.verdict,
        "why": f.why,
        "fix": f.fix,
    }


def audit(cpus: list[int]) -> Audit:
    """Every finding for `cpus`, as plain data."""
    ctx = make_context(cpus)
    findings: list[Finding] = []
    for part in (boot, runtime, tasks, machine):
        findings.extend(part.findings(ctx))
    counts = {v: sum(f.verdict == v for f in findings) for v in (OK, NOT, UNKNOWN)}
    return {
        "host": sysinfo.host(),
        "kernel": sysinfo.kernel(),
        "virtualization": sysinfo.virtualization(),
        "cpus": ctx.cpus,
        "housekeeping": ctx.housekeeping,
        "counts": counts,
        "findings": [_json(f) for f in findings],
    }
