"""Finding tracefs and deciding whether kernel tracing can run here.

tracefs is normally at /sys/kernel/tracing; old systems only expose it under
debugfs.  When neither is mounted, a root user gets it mounted at
/sys/kernel/tracing through the journal, shared with any other jitterscope
process that needs it, and unmounted again by the last of them.
"""

from __future__ import annotations

import os
from pathlib import Path

from jitterscope import mounts
from jitterscope.journal import Journal

PRIMARY = Path("/sys/kernel/tracing")
LEGACY = Path("/sys/kernel/debug/tracing")
TRACE_CLOCK = "x86-tsc"

# (subsystem, event) pairs the session enables when present.  Hard IRQs,
# softirqs, NMIs and context switches are the time-owning contexts; workqueue
# and timer callbacks name what a kworker or TIMER softirq ran.
BASE_EVENTS: list[tuple[str, str]] = [
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
    ("nmi", "nmi_handler"),
    ("sched", "sched_switch"),
    ("workqueue", "workqueue_execute_start"),
    ("workqueue", "workqueue_execute_end"),
    ("timer", "hrtimer_expire_entry"),
    ("timer", "hrtimer_expire_exit"),
    ("timer", "timer_expire_entry"),
    ("timer", "timer_expire_exit"),
]
VECTORS = [
    "local_timer",
    "reschedule",
    "call_function",
    "call_function_single",
    "irq_work",
    "thermal_apic",
    "x86_platform_ipi",
    "spurious_apic",
    "error_apic",
    "deferred_error_apic",
    "threshold_apic",
]
# Without these no attribution is meaningful; the others only add detail.
ESSENTIAL = [("sched", "sched_switch"), ("irq", "irq_handler_entry"), ("irq", "irq_handler_exit")]


def _is_tracefs(p: Path) -> bool:
    return (p / "instances").is_dir() and (p / "trace_clock").exists()


def find_tracefs() -> Path | None:
    """The mounted tracefs directory, or None."""
    for p in (PRIMARY, LEGACY):
        try:
            if _is_tracefs(p):
                return p
        except OSError:
            continue
    return None


def _tracefs_supported() -> bool:
    try:
        return "tracefs" in Path("/proc/filesystems").read_text()
    except OSError:
        return False


def ensure_tracefs(journal: Journal | None) -> Path | None:
    """tracefs, mounting it at /sys/kernel/tracing (journalled) if it is absent.

    The mount is shared with every other jitterscope process that needs it
    (`mounts.use`): the last one to finish unmounts it, and a tracefs
    that was mounted before any jitterscope process is never unmounted."""
    found = find_tracefs()
    if journal is None or os.geteuid() != 0 or not _tracefs_supported() or found == LEGACY:
        return found
    if found is None and not PRIMARY.is_dir():
        return None
    mounts.use(journal, str(PRIMARY), "tracefs", "nodev")
    return find_tracefs()


def wanted_events(root: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """The events to enable that exist here, and the names of those that do not."""
    present: list[tuple[str, str]] = []
    missing: list[str] = []
    candidates = list(BASE_EVENTS)
    for v in VECTORS:
        candidates += [("irq_vectors", f"{v}_entry"), ("irq_vectors", f"{v}_exit")]
    for sub, ev in candidates:
        if (root / "events" / sub / ev / "format").exists():
            present.append((sub, ev))
        elif sub != "irq_vectors" or ev.startswith(("local_timer", "reschedule", "call_function")):
            missing.append(f"{sub}/{ev}")
    return present, missing


def tracing_available() -> tuple[bool, str | None]:
    """Whether a traced measurement can run, and if not (or only partly), why.

    (True, None) when everything is there; (True, "events missing: ...") when
    attribution works with less detail; (False, reason) when it cannot run.
    """
    if os.geteuid() != 0:
        return False, "not root (kernel tracing through tracefs needs root)"
    root = find_tracefs()
    if root is None:
        if not _tracefs_supported():
            return False, "kernel has no tracefs (CONFIG_FTRACE off)"
        if not PRIMARY.is_dir():
            return False, "tracefs not mounted and cannot be mounted (/sys/kernel/tracing missing)"
        # Mountable: the session mounts it through the journal.
        return True, None
    try:
        clocks = (root / "trace_clock").read_text()
    except OSError as err:
        return False, f"cannot read {root}/trace_clock: {err.strerror}"
    if TRACE_CLOCK not in clocks.replace("[", " ").replace("]", " ").split():
        return False, "x86-tsc trace clock unavailable (not an x86 machine with a usable TSC)"
    if not os.access(root / "instances", os.W_OK):
        return False, f"cannot create trace instances in {root}/instances"
    present, missing = wanted_events(root)
    have = set(present)
    absent_essential = [f"{s}/{e}" for s, e in ESSENTIAL if (s, e) not in have]
    if absent_essential:
        return False, f"essential trace events missing: {', '.join(absent_essential)}"
    if not (root / "events" / "irq_vectors").is_dir():
        return True, "event irq_vectors missing (x86 vectors such as local_timer not traced)"
    if missing:
        return True, f"trace events missing: {', '.join(missing)}"
    return True, None
