"""`tune apply`: the runtime part of a plan (or --knob NAME=VALUE), through the journal, then recorded.

Everything is checked before anything changes: knob names, values and their
ranges, CPUs online, root, and a plan made on another host or kernel (refused
unless forced).  Then each change is journalled, made and read back; a failure
undoes every change already made.  The changes that stuck are handed to a
persistent record (record.py) that `tune revert` undoes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from jitterscope import sysinfo
from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.journal import Journal
from jitterscope.knobs import Knob, resolve, tasks
from jitterscope.tune import bootloader, planfile, record
from jitterscope.tune.planfile import PlanFile, PlanSource
from jitterscope.tune.records import ApplyResult, ApplyRow, KnobSource
from jitterscope.units import format_cpulist, parse_cpulist


@dataclass
class Change:
    knob: Knob
    value: str
    before: str
    sources: list[KnobSource] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.knob.name


def knob_source(s: PlanSource) -> KnobSource:
    """A plan knob's source as a change carries it."""
    return {"source": s.source, "expect": s.expect, "factor": s.factor, "ppm": s.ppm}


def parse_pairs(pairs: list[str]) -> list[tuple[str, str]]:
    out = []
    for p in pairs:
        name, eq, value = p.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise UsageError(f"--knob {p!r}: use NAME=VALUE, e.g. vm.stat_interval=10")
        out.append((name.strip(), value.strip()))
    return out


def check_plan_host(plan: PlanFile, force: bool, source: str) -> None:
    here, kernel = sysinfo.host(), sysinfo.kernel()
    if (plan.host, plan.kernel) != (here, kernel) and not force:
        raise UsageError(
            f"{source} was made from a run on {plan.host} (kernel {plan.kernel}); this is {here} "
            f"(kernel {kernel}): IRQ numbers, process ids and defaults differ. Make a plan here, "
            f"or use --force"
        )


def _check_cpus(k: Knob, value: str) -> None:
    if k.form not in ("cpulist", "cpumask"):
        return
    name = k.name
    cpus = parse_cpulist(value) if value else []
    if not cpus:
        raise UsageError(f"knob {name}: an empty CPU set would leave nothing to run on")
    online = sysinfo.online_cpus()
    off = [c for c in cpus if c not in online]
    if off:
        raise UsageError(f"knob {name}: CPU {format_cpulist(off)} is offline (online: {format_cpulist(online)})")


def prepare(pairs: list[tuple[str, str, list[KnobSource]]]) -> list[Change]:
    """Resolve and validate every change; nothing is changed.  One-line UsageError on the first bad one."""
    changes, seen = [], set()
    for name, value, sources in pairs:
        k = resolve(name)
        v = k.normalise(value)
        _check_cpus(k, v)
        if k.name in seen:
            raise UsageError(f"knob {k.name} is given twice")
        seen.add(k.name)
        if not k.exists():
            raise UsageError(f"knob {k.name}: not present on this machine")
        changes.append(Change(k, v, k.read(), sources))
    return changes


def from_plan(plan: PlanFile) -> tuple[list[Change], list[str]]:
    """The plan's runtime changes, and the knobs skipped because their process has ended since."""
    pairs, skipped = [], []
    for k in plan.knobs:
        if k.process is not None and not _same_process(k.knob, k.process):
            skipped.append(f"{k.knob}: process {k.process} has ended since the plan was made")
            continue
        pairs.append((k.knob, k.value, [knob_source(s) for s in k.sources]))
    return prepare(pairs), skipped


def changes_of(
    plan_path: Path | None, knobs: list[str], force: bool
) -> tuple[list[Change], list[str], list[str], PlanFile | None]:
    """(changes, skipped, boot parameters, plan) from PLAN and/or --knob, all validated; nothing changed.
    A --knob replaces the plan's entry for the same knob."""
    if plan_path is None and not knobs:
        raise UsageError("give a PLAN file (from `tune plan --out`) or --knob NAME=VALUE")
    changes: list[Change] = []
    skipped: list[str] = []
    boot: list[str] = []
    plan_file = None
    if plan_path is not None:
        plan_file = planfile.load(plan_path)
        check_plan_host(plan_file, force, str(plan_path))
        changes, skipped = from_plan(plan_file)
        boot = plan_file.boot.params
    extra = prepare([(n, v, []) for n, v in parse_pairs(knobs)])
    names = {c.name for c in extra}
    return [c for c in changes if c.name not in names] + extra, skipped, boot, plan_file


def _same_process(name: str, comm: str) -> bool:

    pid = name.split(".")[1] if name.count(".") == 2 else ""
    sf = tasks.stat_fields(pid) if pid.isdigit() else None
    return sf is not None and sf[0] == comm


def apply_changes(
    changes: list[Change],
    label: str,
    boot: list[str] | None = None,
    boot_root: Path | None = None,
    plan: str | None = None,
) -> ApplyResult:
    """Make every change through one journal, then hand them to a persistent record."""
    if os.geteuid() != 0:
        raise JitterscopeError("tune apply changes kernel settings: run it as root (or use --dry-run)")
    rows: list[ApplyRow] = []
    with Journal(label) as j:
        for c in changes:
            entries = c.knob.apply(j, c.value)
            rows.append(
                {
                    "knob": c.name,
                    "before": c.before,
                    "value": c.value,
                    "now": c.knob.read(),
                    "changed": bool(entries),
                    "sources": c.sources,
                }
            )
        boot_info = bootloader.apply(j, boot, boot_root or Path("/")) if boot else None
        path = record.persist(j, label=label, plan=plan)
    return {"record": str(path) if path else None, "rows": rows, "boot": boot_info}
