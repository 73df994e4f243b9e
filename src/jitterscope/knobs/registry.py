"""The named knobs `tune` and `doe` change, each with where its meaning is documented.

Names follow sysctl where the knob is a sysctl (`vm.stat_interval`); the others
are named for their sysfs/procfs home: `mm.thp.enabled`, `mm.ksm.run`,
`workqueue.cpumask`, `workqueue.NAME.cpumask`, `irq.default_affinity`,
`irq.N.affinity` (N an IRQ number or its action name, `*` every movable IRQ) and
`task.PID.affinity` (every thread of a process).  CPU sets are always given as
CPU lists, whatever syntax the file itself speaks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from jitterscope.errors import UsageError
from jitterscope.journal import Entry, Journal
from jitterscope.knobs import irq, tasks
from jitterscope.knobs.base import FileKnob

SYSCTL = Path("/proc/sys")
THP = Path("/sys/kernel/mm/transparent_hugepage")
WORKQUEUE = Path("/sys/devices/virtual/workqueue")
SYSCTL_DOC = "Documentation/admin-guide/sysctl/"


class Knob(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def doc(self) -> str: ...
    @property
    def runtime(self) -> bool: ...
    @property
    def form(self) -> str: ...

    def exists(self) -> bool: ...
    def read(self) -> str: ...
    def normalise(self, value: Any) -> str: ...
    def apply(self, j: Journal, value: str) -> list[Entry]: ...


def _sysctl(name: str, lo: int, hi: int, doc: str, form: str = "int") -> FileKnob:
    return FileKnob(name, SYSCTL / name.replace(".", "/"), form, doc, lo, hi)


FILE_KNOBS: dict[str, FileKnob] = {
    k.name: k
    for k in (
        _sysctl("kernel.timer_migration", 0, 1, f"{SYSCTL_DOC}kernel.rst: 1 lets busy CPUs expire idle CPUs' timers"),
        _sysctl(
            "vm.stat_interval",
            1,
            86400,
            f"{SYSCTL_DOC}vm.rst: seconds between per-CPU vmstat_update work (kernel-per-CPU-kthreads.rst)",
        ),
        _sysctl("kernel.watchdog", 0, 1, f"{SYSCTL_DOC}kernel.rst: soft and hard lockup detectors"),
        _sysctl("kernel.soft_watchdog", 0, 1, f"{SYSCTL_DOC}kernel.rst: soft lockup detector (per-CPU hrtimer)"),
        _sysctl("kernel.nmi_watchdog", 0, 1, f"{SYSCTL_DOC}kernel.rst: hard lockup detector (perf NMI)"),
        _sysctl(
            "kernel.watchdog_thresh",
            0,
            60,
            f"{SYSCTL_DOC}kernel.rst: lockup threshold; the hrtimer fires every 2/5 of it",
        ),
        _sysctl(
            "kernel.watchdog_cpumask", 0, 0, f"{SYSCTL_DOC}kernel.rst: CPUs the lockup detectors run on", form="cpulist"
        ),
        _sysctl(
            "kernel.sched_rt_runtime_us",
            -1,
            1_000_000,
            f"{SYSCTL_DOC}kernel.rst, scheduler/sched-rt-group.rst: RT throttling (-1 off)",
        ),
        _sysctl(
            "kernel.hung_task_timeout_secs",
            0,
            2**31 - 1,
            f"{SYSCTL_DOC}kernel.rst: khungtaskd scans every task this often (0 off)",
        ),
        _sysctl("kernel.numa_balancing", 0, 3, f"{SYSCTL_DOC}kernel.rst: automatic NUMA balancing (page-fault scans)"),
        _sysctl("vm.compaction_proactiveness", 0, 100, f"{SYSCTL_DOC}vm.rst: background compaction by kcompactd"),
        _sysctl("vm.swappiness", 0, 200, f"{SYSCTL_DOC}vm.rst: how eagerly anonymous memory is swapped"),
        FileKnob(
            "mm.thp.enabled",
            THP / "enabled",
            "choice",
            "admin-guide/mm/transhuge.rst: transparent huge pages",
            choices=("always", "madvise", "never"),
        ),
        FileKnob(
            "mm.thp.defrag",
            THP / "defrag",
            "choice",
            "admin-guide/mm/transhuge.rst: direct/deferred compaction for huge pages",
            choices=("always", "defer", "defer+madvise", "madvise", "never"),
        ),
        FileKnob(
            "mm.thp.khugepaged.defrag",
            THP / "khugepaged/defrag",
            "int",
            "admin-guide/mm/transhuge.rst: khugepaged compacts to collapse pages",
            0,
            1,
        ),
        FileKnob(
            "mm.ksm.run",
            Path("/sys/kernel/mm/ksm/run"),
            "int",
            "admin-guide/mm/ksm.rst: ksmd merging (0 stop, 1 run, 2 unmerge)",
            0,
            2,
        ),
        FileKnob(
            "irq.default_affinity",
            Path("/proc/irq/default_smp_affinity"),
            "cpumask",
            "core-api/irq/irq-affinity.rst: affinity of IRQs set up from now on",
        ),
        FileKnob(
            "workqueue.cpumask",
            WORKQUEUE / "cpumask",
            "cpumask",
            "core-api/workqueue.rst: CPUs of every unbound workqueue (kernel-per-CPU-kthreads.rst)",
        ),
    )
}


def workqueue_knob(wq: str) -> FileKnob:
    return FileKnob(
        f"workqueue.{wq}.cpumask",
        WORKQUEUE / wq / "cpumask",
        "cpumask",
        f"core-api/workqueue.rst: CPUs of the unbound workqueue {wq} (WQ_SYSFS)",
    )


def workqueues() -> list[str]:
    """Workqueues visible in sysfs whose CPUs can be set (WQ_SYSFS, unbound)."""
    try:
        return sorted(p.parent.name for p in WORKQUEUE.glob("*/cpumask"))
    except OSError:
        return []


def known_names() -> list[str]:
    return sorted(FILE_KNOBS) + ["workqueue.NAME.cpumask", "irq.N.affinity", "irq.*.affinity", "task.PID.affinity"]


def resolve(name: str) -> Knob:
    """The knob called `name`; a one-line UsageError naming the known ones otherwise."""

    if name in FILE_KNOBS:
        return FILE_KNOBS[name]
    if name.startswith("workqueue.") and name.endswith(".cpumask") and name.count(".") >= 2:
        wq = name[len("workqueue.") : -len(".cpumask")]
        if wq not in workqueues():
            raise UsageError(
                f"knob {name}: no workqueue {wq!r} in {WORKQUEUE} (there: {', '.join(workqueues()) or 'none'})"
            )
        return workqueue_knob(wq)
    if name.startswith("irq.") and name.endswith(".affinity") and len(name) > len("irq..affinity"):
        return irq.knob(name[len("irq.") : -len(".affinity")])
    if name.startswith("task.") and name.endswith(".affinity") and len(name) > len("task..affinity"):
        return tasks.knob(name[len("task.") : -len(".affinity")])
    raise UsageError(f"unknown knob {name!r} (known: {', '.join(known_names())})")
