"""The kernel command line as the kernel reads it (Documentation/admin-guide/kernel-parameters.rst).

Parameters are separated by spaces; a value may be double-quoted; `-` and `_`
are the same in a name; everything after a lone `--` goes to init, not the
kernel; a repeated parameter takes its last value.  CPU lists use the kernel's
own syntax (`N`, `all`, `0-15:2/4`; units.parse_kernel_cpulist).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from jitterscope.errors import JitterscopeError
from jitterscope.units import parse_kernel_cpulist

ISOLCPUS_FLAGS = ("nohz", "domain", "managed_irq")


@dataclass
class Cmdline:
    params: dict[str, str | None]  # name (underscores) -> value, None for a bare flag
    text: str

    def has(self, name: str) -> bool:
        return name in self.params

    def get(self, name: str) -> str | None:
        return self.params.get(name)


def parse(text: str) -> Cmdline:
    try:
        words = shlex.split(text)
    except ValueError:  # an unbalanced quote: the kernel reads on to the end
        words = text.split()
    params: dict[str, str | None] = {}
    for w in words:
        if w == "--":
            break
        name, eq, value = w.partition("=")
        params[name.replace("-", "_")] = value if eq else None
    return Cmdline(params, text.strip())


def current() -> Cmdline:
    try:
        return parse(Path("/proc/cmdline").read_text())
    except OSError:
        return parse("")


def isolcpus(value: str | None, nr_cpus: int) -> tuple[list[str], list[int]]:
    """(flags, CPUs) of `isolcpus=[flag,...,]LIST`; with no flag the kernel means `domain`."""
    if not value:
        return [], []
    parts = value.split(",")
    flags = []
    while parts and parts[0] in ISOLCPUS_FLAGS:
        flags.append(parts.pop(0))
    if not parts:
        raise JitterscopeError(f"isolcpus={value}: no CPU list after the flags")
    return flags or ["domain"], parse_kernel_cpulist(",".join(parts), nr_cpus)


def cpus_of(cmd: Cmdline, name: str, nr_cpus: int) -> list[int]:
    """CPUs named by a CPU-list parameter (nohz_full, rcu_nocbs, irqaffinity, kthread_cpus, isolcpus).

    `nohz_full` is void with `nohz=off`; a bare `rcu_nocbs` offloads every CPU (kernel >= 5.17)."""
    value = cmd.get(name)
    if name == "isolcpus":
        return isolcpus(value, nr_cpus)[1]
    if name == "nohz_full" and cmd.get("nohz") == "off":
        return []
    if name == "rcu_nocbs" and cmd.has(name) and not value:
        return list(range(nr_cpus))
    return parse_kernel_cpulist(value, nr_cpus) if value else []


def rcu_offloaded(cmd: Cmdline, nr_cpus: int) -> list[int]:
    """CPUs whose RCU callbacks are offloaded: rcu_nocbs, and nohz_full which implies it."""
    return sorted(set(cpus_of(cmd, "rcu_nocbs", nr_cpus)) | set(cpus_of(cmd, "nohz_full", nr_cpus)))
