"""Interrupts: each IRQ's handlers, affinity, effective CPU, whether it can move, and moving them.

Whether user space may set an IRQ's affinity is visible without writing: the
kernel creates `/proc/irq/N/smp_affinity(_list)` writable only when it can
(kernel/irq/proc.c, register_irq_proc, irq_can_set_affinity_usr); managed IRQs
(spread over the CPUs by their driver, e.g. virtio-blk and NVMe queues) and
per-CPU ones are read-only.  Moving a managed IRQ off a CPU takes the boot
parameter `isolcpus=managed_irq,CPUS` (kernel-parameters.txt).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.journal import Entry, Journal
from jitterscope.knobs.base import canonical, write_file
from jitterscope.units import format_cpulist, parse_cpulist

PROC_IRQ = Path("/proc/irq")
DOC = "core-api/irq/irq-affinity.rst: CPUs allowed to handle the IRQ"


@dataclass
class Irq:
    number: int
    actions: list[str]  # handler names (the IRQ's subdirectories)
    affinity: list[int]  # smp_affinity_list
    effective: list[int] | None  # effective_affinity_list: the CPU(s) it really goes to
    movable: bool  # user space may set its affinity
    counts: dict[int, int] = field(default_factory=dict)  # per CPU since boot (/proc/interrupts)

    @property
    def label(self) -> str:
        return f"IRQ {self.number} ({', '.join(self.actions) or 'no handler'})"

    @property
    def path(self) -> Path:
        return PROC_IRQ / str(self.number) / "smp_affinity_list"


def _counts() -> dict[int, dict[int, int]]:
    out: dict[int, dict[int, int]] = {}
    try:
        lines = Path("/proc/interrupts").read_text().splitlines()
    except OSError:
        return out
    cpus = [int(c[3:]) for c in lines[0].split()] if lines else []
    for line in lines[1:]:
        head, _, rest = line.partition(":")
        if head.strip().isdigit():
            vals = rest.split()[: len(cpus)]
            out[int(head)] = {c: int(v) for c, v in zip(cpus, vals) if v.isdigit()}
    return out


def _read(path: Path) -> list[int] | None:
    try:
        text = path.read_text().strip()
        return parse_cpulist(text) if text else []
    except (OSError, JitterscopeError):
        return None


def irqs() -> list[Irq]:
    """Every IRQ in /proc/irq, in number order."""
    if not PROC_IRQ.is_dir():
        return []
    counts = _counts()
    out = []
    for d in sorted((p for p in PROC_IRQ.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        aff = _read(d / "smp_affinity_list")
        if aff is None:
            continue
        try:
            movable = bool(os.stat(d / "smp_affinity_list").st_mode & stat.S_IWUSR)
            actions = sorted(p.name for p in d.iterdir() if p.is_dir())
        except OSError:
            continue
        out.append(
            Irq(int(d.name), actions, aff, _read(d / "effective_affinity_list"), movable, counts.get(int(d.name), {}))
        )
    return out


def find(ref: str) -> list[Irq]:
    """The IRQs called `ref`: a number, or a handler name as /proc/interrupts shows it."""
    return [i for i in irqs() if str(i.number) == ref or ref in i.actions]


class IrqKnob:
    """irq.N.affinity: one IRQ's smp_affinity_list (N a number or a handler name)."""

    runtime = True
    doc = DOC
    form = "cpulist"

    def __init__(self, ref: str, irq: Irq) -> None:
        self.name, self.irq = f"irq.{ref}.affinity", irq

    def exists(self) -> bool:
        return self.irq.path.exists()

    def read(self) -> str:
        return canonical("cpulist", self.irq.path.read_text())

    def normalise(self, value: Any) -> str:
        return _cpus(self.name, value)

    def apply(self, j: Journal, value: str) -> list[Entry]:
        if not self.irq.movable:
            raise JitterscopeError(
                f"knob {self.name}: {self.irq.label} cannot move at runtime (a managed or "
                f"per-CPU IRQ); boot with isolcpus=managed_irq,CPUS instead"
            )
        e = write_file(j, self.name, self.irq.path, "cpulist", value, value)
        return [e] if e else []


class AllIrqsKnob:
    """irq.*.affinity: every IRQ that can move (the others are left, and listed by `tune audit`)."""

    runtime = True
    form = "cpulist"
    name = "irq.*.affinity"
    doc = DOC + " (every movable IRQ)"

    def exists(self) -> bool:
        return PROC_IRQ.is_dir()

    def read(self) -> str:
        values = {format_cpulist(i.affinity) for i in irqs() if i.movable}
        return values.pop() if len(values) == 1 else "mixed"

    def normalise(self, value: Any) -> str:
        return _cpus(self.name, value)

    def apply(self, j: Journal, value: str) -> list[Entry]:
        return move_all(j, parse_cpulist(value))


def _cpus(name: str, value: Any) -> str:
    try:
        return format_cpulist(parse_cpulist(str(value)))
    except UsageError as err:
        raise UsageError(f"knob {name}: {err}") from None


def knob(ref: str) -> IrqKnob | AllIrqsKnob:
    if ref == "*":
        return AllIrqsKnob()
    found = find(ref)
    if not found:
        raise UsageError(f"knob irq.{ref}.affinity: no IRQ {ref!r} on this machine (see /proc/interrupts)")
    if len(found) > 1:
        raise UsageError(
            f"knob irq.{ref}.affinity: {ref!r} names IRQs {', '.join(str(i.number) for i in found)}; give the number"
        )
    return IrqKnob(ref, found[0])


def move_all(j: Journal, cpus: list[int]) -> list[Entry]:
    """Set every movable IRQ's affinity to `cpus`; IRQs the kernel refuses are skipped (nothing to undo)."""
    target = format_cpulist(cpus)
    done = []
    for i in irqs():
        if not i.movable or format_cpulist(i.affinity) == target:
            continue
        try:
            e = write_file(j, f"irq.{i.number}.affinity", i.path, "cpulist", target, target)
        except JitterscopeError:
            continue  # e.g. an IRQ that cannot go to these CPUs: the write failed, nothing changed
        if e:
            done.append(e)
    return done
