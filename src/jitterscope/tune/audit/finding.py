"""One finding of `tune audit`, and what every audit part knows about the CPUs to isolate."""

from __future__ import annotations

from dataclasses import dataclass

from jitterscope import sysinfo
from jitterscope.errors import UsageError
from jitterscope.units import format_cpulist, possible_cpu_limit

OK, NOT, UNKNOWN = "ok", "not isolated", "cannot tell"


@dataclass
class Finding:
    group: str
    knob: str
    value: str
    recommended: str
    setting: str  # boot, runtime, build or hardware
    source: str  # how it was read
    verdict: str  # OK, NOT or UNKNOWN
    why: str
    fix: str | None = None  # the command or boot parameter that makes it ok


@dataclass
class Context:
    cpus: list[int]  # the CPUs to isolate
    housekeeping: list[int]  # the other online CPUs
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
    housekeeping = [c for c in online if c not in cpus]
    if not housekeeping:
        # every recommendation names the CPUs left for the kernel: with none, each would be empty and apply refuses it
        raise UsageError(
            f"--cpus {format_cpulist(sorted(cpus))} is every online CPU: leave at least one for housekeeping "
            f"(e.g. --cpus {format_cpulist(online[1:]) or 'N'} keeps CPU {online[0]})"
        )
    return Context(sorted(cpus), housekeeping, possible_cpu_limit())
