"""Remedies for thread, NMI and unexplained sources (see rules.py for the rest)."""

from __future__ import annotations

import os
import pwd
import re
from pathlib import Path

from jitterscope.knobs import FILE_KNOBS, tasks
from jitterscope.measure.peers import OTHER_SUFFIX, SELF_SUFFIX
from jitterscope.tune.records import Knob, LeftTask, PinnedTask, Remedy, Source
from jitterscope.tune.rules import Ctx, knob, out

# The measuring jitterscope's own threads (measure/peers.py names them `NAME (jitterscope)`) and its probe;
# another jitterscope's carry OTHER_SUFFIX.
SELF = re.compile(rf"({re.escape(SELF_SUFFIX)}$)|^(js-probe/|jitterscope-pro)(?!.*{re.escape(OTHER_SUFFIX)})")
KTHREADS: dict[str, tuple[str, str | None, str, str]] = {  # name pattern -> (knob, value, expectation, why)
    r"^khugepaged$": ("mm.thp.enabled", "never", "gone", "khugepaged collapses pages into huge pages"),
    r"^kcompactd\d+$": ("vm.compaction_proactiveness", "0", "fewer", "proactive memory compaction"),
    r"^ksmd$": ("mm.ksm.run", "0", "gone", "kernel samepage merging scans memory"),
    r"^watchdog/\d+$": ("kernel.watchdog_cpumask", None, "gone", "the lockup detector's per-CPU thread"),
}
BOUND = {  # per-CPU kernel threads: what removes their work
    r"^ksoftirqd/": "softirqs deferred to a thread under load: see the softirq sources",
    r"^migration/": "the stopper thread: moves tasks for load balancing and affinity changes (isolcpus=domain)",
    r"^rcuc/": "RCU callbacks (rcu_nocbs offloads them)",
    r"^cpuhp/": "CPU hotplug: do not offline/online CPUs while measuring",
    r"^kworker/\d+:": "a per-CPU kworker: see its work functions",
    r"^idle_inject/": "idle injection (thermal or powercap): a firmware/platform policy",
}
SWAPPER = re.compile(r"^swapper/")


def _alive(pids: list[int], name: str) -> list[tuple[int, str]]:
    """(pid, comm) of the pids still running under that name (a thread name may be `comm (process)`)."""
    comm = name.split(" (")[0]
    found = []
    for pid in pids:
        sf = tasks.stat_fields(pid)
        if sf is not None and sf[0] == comm[:15]:
            found.append((pid, sf[0]))
    return found


def _cgroup(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return ""


def _unit(pid: int) -> str | None:
    m = re.search(r"/([^/]+\.service)$", _cgroup(pid), re.MULTILINE)
    return m.group(1) if m else None


def _system_uid_max() -> int:
    """The highest uid of a system account (login.defs SYS_UID_MAX, else UID_MIN - 1, else 999)."""
    try:
        defs = dict(ln.split()[:2] for ln in Path("/etc/login.defs").read_text().splitlines() if len(ln.split()) >= 2)
    except OSError:
        defs = {}
    for key, off in (("SYS_UID_MAX", 0), ("UID_MIN", 1)):
        if defs.get(key, "").isdigit():
            return int(defs[key]) - off
    return 999


def _owner(pid: int) -> tuple[int, str] | None:
    try:
        uid = Path(f"/proc/{pid}").stat().st_uid
    except OSError:
        return None
    try:
        return uid, pwd.getpwuid(uid).pw_name
    except KeyError:
        return uid, str(uid)


def scope(pid: int, comm: str, kernel: bool, ctx: Ctx) -> str | None:
    """Why tune may move this task, or None: it is someone's shell, test runner or tool, left alone."""
    if kernel:
        return "a kernel thread"
    if str(pid) in ctx.move or comm in ctx.move:
        return "named with --move"
    if "/system.slice/" in _cgroup(pid) and _unit(pid):
        return f"the system service {_unit(pid)}"
    owner = _owner(pid)
    if owner and 0 < owner[0] <= _system_uid_max():
        return f"a daemon of the system user {owner[1]}"
    return None


def thread_source(s: Source, ctx: Ctx) -> Remedy:
    name, ppm = s["name"], s["ppm"]
    if SELF.search(name):
        return out("self", 0.0, "jitterscope's own measurement (probe start/stop, its tool process)")
    if name.endswith(OTHER_SUFFIX):
        return out("none", 0.0, "", reason="another jitterscope")
    if SWAPPER.match(name):
        return out("none", 0.0, "the idle task")
    for pat, (k, value, expect, why) in KTHREADS.items():
        if re.match(pat, name) and (k not in FILE_KNOBS or FILE_KNOBS[k].exists()):
            return out(
                "knob",
                ppm if expect == "gone" else ppm * 0.5,
                f"{name}: {why}",
                [knob(k, value or ctx.hk, expect, 0.0 if expect == "gone" else None, why)],
            )
    for pat, why in BOUND.items():
        if re.match(pat, name):
            return out("none", 0.0, f"{name} is bound to its CPU: {why}")
    if name.startswith("kworker/u"):
        return out(
            "knob",
            ppm,
            "an unbound kworker: the workqueue cpumask keeps unbound work on housekeeping CPUs",
            [knob("workqueue.cpumask", ctx.hk, "gone", 0.0, "unbound work off these CPUs")],
        )
    return _process(s, ctx)


def _process(s: Source, ctx: Ctx) -> Remedy:
    name, ppm = s["name"], s["ppm"]
    live = _alive(ctx.pids.get(name, []), name)
    if not live:
        return out("none", 0.0, "", reason="short-lived")
    ks: list[Knob] = []
    notes: list[str] = []
    left: list[LeftTask] = []
    held: list[PinnedTask] = []
    for pid, comm in live:
        kernel = bool((tasks.stat_fields(pid) or ("", 0))[1] & tasks.PF_KTHREAD)
        try:
            pinned = set(os.sched_getaffinity(pid)) <= set(ctx.cpus)
        except OSError:
            continue
        why = f"{'kernel thread' if kernel else 'process'} {comm} (pid {pid})"
        if pinned:
            why += f", pinned to CPU {ctx.cpus_text} only (by itself or its launcher): moving it overrides that"
        owner = None if kernel else _owner(pid)
        reason = scope(pid, comm, kernel, ctx)
        if reason is None:
            left.append({"pid": pid, "process": comm, "user": owner[1] if owner else "?", "pinned": pinned})
            continue
        unit = None if kernel else _unit(pid)
        if unit:
            notes.append(
                f"{comm} is {unit}: make it last with `systemctl set-property {unit} AllowedCPUs={ctx.hk}` "
                f"or CPUAffinity={ctx.hk} in the unit"
            )
        k = knob(f"task.{pid}.affinity", ctx.hk, "gone", 0.0, f"{why}; in scope: {reason}", process=comm)
        ks.append(k)
        if pinned:
            held.append({"pid": pid, "process": comm})
    if not ks and not left:
        return out("none", 0.0, "", reason="short-lived")
    if not ks:
        r = out("none", 0.0, "", reason="out of scope")
    else:
        why = f"{name}: move it to the housekeeping CPUs (sched_setaffinity on every thread)"
        r = out("knob", ppm, "; ".join([why] + notes), ks)
    # `left`: out of scope, not moved; `pinned`: moved although pinned to the measured CPUs only
    if left:
        r["left"] = left
    if held:
        r["pinned"] = held
    return r


def nmi_source(s: Source, ctx: Ctx) -> Remedy:
    k = FILE_KNOBS["kernel.nmi_watchdog"]
    if k.exists() and k.read() != "0":
        return out(
            "knob",
            s["ppm"],
            "NMIs of the hard-lockup detector (perf)",
            [knob("kernel.nmi_watchdog", "0", "gone", 0.0, "no hard-lockup NMIs")],
            ["nmi_watchdog=0"],
        )
    return out("none", 0.0, f"NMI {s['name']}: perf sampling or a hardware event")


def unexplained_source(s: Source, ctx: Ctx) -> Remedy:
    if ctx.virtualization:
        return out(
            "host",
            0.0,
            f"time the guest kernel cannot see: the {ctx.virtualization} host took it (VM "
            "exits, a descheduled vCPU). A guest cannot fix this; the host must: dedicate (pin) physical "
            "CPUs to these vCPUs without overcommit, isolate those pCPUs on the host (isolcpus/nohz_full), "
            "enable halt-polling (halt_poll_ns) or guest haltpoll, and keep host IRQs, THP/KSM scanning "
            "and other guests off them",
        )
    return out(
        "host",
        0.0,
        "time no kernel activity covers on bare metal: system management interrupts (SMIs) "
        "and firmware. Check the SMI count (MSR 0x34, e.g. turbostat's SMI column) and ask the vendor for "
        "a low-latency BIOS profile (no power management SMIs, no C-states beyond C1, memory patrol "
        "scrubbing off)",
    )
