"""Runtime knobs: IRQs, workqueues, sysctls, THP, KSM, swap (all read through jitterscope.knobs)."""

from __future__ import annotations

from pathlib import Path

from jitterscope.knobs import FILE_KNOBS, irq
from jitterscope.knobs.registry import workqueue_knob, workqueues
from jitterscope.tune.audit.finding import NOT, OK, UNKNOWN, Context, Finding
from jitterscope.units import format_cpulist, parse_cpulist

# knob -> (recommended, is it ok?, why when ok, why when not) for the single-value knobs
RULES = {
    "kernel.timer_migration": (
        "0",
        lambda v: v == "0",
        "timers stay on the CPU that armed them",
        "a busy CPU may be picked to expire idle CPUs' timers (timer migration hierarchy)",
    ),
    "vm.stat_interval": (
        "10",
        lambda v: int(v) >= 10,
        "vmstat_update runs at most every {v} s",
        "vmstat_update runs on each CPU every {v} s (kworker)",
    ),
    "kernel.numa_balancing": (
        "0",
        lambda v: v == "0",
        "no NUMA hinting faults",
        "NUMA balancing unmaps pages to sample accesses (page faults in the workload)",
    ),
    "kernel.sched_rt_runtime_us": (
        "-1 (for SCHED_FIFO workloads)",
        lambda v: v == "-1",
        "no RT throttling",
        ("a SCHED_FIFO workload is throttled {v} us per second at most; matters only for real-time tasks"),
    ),
    "mm.thp.enabled": (
        "never",
        lambda v: v in ("never", "madvise"),
        "THP is {v}: only regions that ask, if any",
        "THP is {v}: khugepaged collapses pages and faults may compact memory",
    ),
    "mm.thp.defrag": (
        "never",
        lambda v: v != "always",
        "no direct compaction on faults ({v})",
        "faults stall in direct compaction ({v})",
    ),
    "mm.thp.khugepaged.defrag": (
        "0",
        lambda v: v == "0",
        "khugepaged does not compact",
        "khugepaged compacts memory to collapse huge pages",
    ),
    "kernel.hung_task_timeout_secs": (
        "600",
        lambda v: v == "0" or int(v) >= 600,
        "khungtaskd scans for hung tasks at most every {v} s (0: never)",
        "khungtaskd wakes every {v} s to scan every task (tuned's realtime profile sets 600)",
    ),
    "mm.ksm.run": ("0", lambda v: v != "1", "ksmd is not merging", "ksmd scans memory to merge pages"),
    "vm.compaction_proactiveness": (
        "0",
        lambda v: v == "0",
        "no proactive compaction",
        "kcompactd compacts proactively (proactiveness {v})",
    ),
}


def _knob_finding(group: str, name: str) -> Finding:
    k = FILE_KNOBS[name]
    rec, ok, yes, no = RULES[name]
    if not k.exists():
        return Finding(group, name, "(absent)", rec, "runtime", str(k.path), OK, "not in this kernel: nothing to do")
    v = k.read()
    good = ok(v)
    verdict = OK if good else (UNKNOWN if name == "kernel.sched_rt_runtime_us" else NOT)
    return Finding(
        group,
        name,
        v,
        rec,
        "runtime",
        str(k.path),
        verdict,
        (yes if good else no).format(v=v),
        None if good else f"jitterscope tune apply --knob {name}={rec.split()[0]}",
    )


def _irq_findings(ctx: Context) -> list[Finding]:
    out = []
    for i in irq.irqs():
        on = ctx.touches(i.affinity)
        eff = ctx.touches(i.effective)
        value = format_cpulist(i.affinity) + (f" (effective {format_cpulist(i.effective)})" if i.effective else "")
        name = f"irq.{i.number}.affinity ({', '.join(i.actions) or 'no handler'})"
        if not on:
            verdict, why, fix = OK, "stays off them", None
        elif not i.movable:
            verdict, why = (
                NOT,
                (
                    f"cannot move at runtime (managed or per-CPU IRQ); handled on CPU {format_cpulist(eff)}"
                    if eff
                    else "cannot move at runtime (managed or per-CPU IRQ); allowed on them"
                ),
            )
            fix = f"isolcpus=managed_irq,{ctx.cpus_text}"
        else:
            verdict = NOT
            why = (
                f"handled on CPU {format_cpulist(eff)}"
                if eff
                else f"allowed on CPU {format_cpulist(on)} (handled elsewhere now)"
            )
            fix = f"jitterscope tune apply --knob irq.{i.number}.affinity={ctx.hk_text}"
        out.append(Finding("interrupts", name, value, ctx.hk_text, "runtime", str(i.path), verdict, why, fix))
    k = FILE_KNOBS["irq.default_affinity"]
    if k.exists():
        on = ctx.touches(parse_cpulist(k.read()))
        out.append(
            Finding(
                "interrupts",
                k.name,
                k.read(),
                ctx.hk_text,
                "runtime",
                str(k.path),
                NOT if on else OK,
                "IRQs set up from now on may use them" if on else "new IRQs stay off them",
                f"jitterscope tune apply --knob irq.default_affinity={ctx.hk_text}" if on else None,
            )
        )
    return out


def _workqueue_findings(ctx: Context) -> list[Finding]:
    out = []
    for k in [FILE_KNOBS["workqueue.cpumask"]] + [workqueue_knob(w) for w in workqueues()]:
        if not k.exists():
            continue
        on = ctx.touches(parse_cpulist(k.read()))
        what = "unbound work items (kworker/uN)" if k.name == "workqueue.cpumask" else k.name.split(".")[1]
        out.append(
            Finding(
                "workqueues",
                k.name,
                k.read(),
                ctx.hk_text,
                "runtime",
                str(k.path),
                NOT if on else OK,
                f"{what} may run on them" if on else f"{what} stay off them",
                f"jitterscope tune apply --knob {k.name}={ctx.hk_text}" if on else None,
            )
        )
    return out


def _watchdog_findings(ctx: Context) -> list[Finding]:
    wd, mask, nmi = (FILE_KNOBS[n] for n in ("kernel.watchdog", "kernel.watchdog_cpumask", "kernel.nmi_watchdog"))
    out = []
    if wd.exists() and mask.exists():
        on = ctx.touches(parse_cpulist(mask.read()) if mask.read() else [])
        off = wd.read() == "0" or not on
        out.append(
            Finding(
                "watchdog",
                mask.name,
                f"{mask.read()} (kernel.watchdog={wd.read()})",
                ctx.hk_text,
                "runtime",
                str(mask.path),
                OK if off else NOT,
                "no lockup-detector hrtimer on them"
                if off
                else "watchdog_timer_fn fires on them every watchdog_thresh*2/5 s (local_timer)",
                None if off else f"jitterscope tune apply --knob kernel.watchdog_cpumask={ctx.hk_text}",
            )
        )
    if nmi.exists():
        ok = nmi.read() == "0"
        out.append(
            Finding(
                "watchdog",
                nmi.name,
                nmi.read(),
                "0",
                "runtime",
                str(nmi.path),
                OK if ok else NOT,
                "no hard-lockup NMIs" if ok else "perf NMIs check for hard lockups",
                None if ok else "jitterscope tune apply --knob kernel.nmi_watchdog=0",
            )
        )
    return out


def _swap() -> Finding:
    try:
        lines = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return Finding("memory", "swap", "?", "none", "runtime", "/proc/swaps", UNKNOWN, "/proc/swaps unreadable")
    used = [ln.split()[0] for ln in lines if ln.strip()]
    return Finding(
        "memory",
        "swap",
        ", ".join(used) or "none",
        "none",
        "runtime",
        "/proc/swaps",
        NOT if used else OK,
        "pages of the workload can be swapped out and faulted back in; kswapd runs" if used else "no swap",
        "swapoff -a" if used else None,
    )


def findings(ctx: Context) -> list[Finding]:
    out = _irq_findings(ctx) + _workqueue_findings(ctx) + _watchdog_findings(ctx)
    out += [
        _knob_finding("timers", "kernel.timer_migration"),
        _knob_finding("kworkers", "vm.stat_interval"),
        _knob_finding("scheduler", "kernel.sched_rt_runtime_us"),
        _knob_finding("kernel threads", "kernel.hung_task_timeout_secs"),
        _knob_finding("memory", "kernel.numa_balancing"),
    ]
    out += [
        _knob_finding("memory", n)
        for n in (
            "mm.thp.enabled",
            "mm.thp.defrag",
            "mm.thp.khugepaged.defrag",
            "mm.ksm.run",
            "vm.compaction_proactiveness",
        )
    ]
    return out + [_swap()]
