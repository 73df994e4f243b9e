"""Which knob removes or moves each kind of noise source (kernel-per-CPU-kthreads.rst is the main reference).

`remedy(source, ctx)` returns what a plan says about one source: runtime knobs
(`knob`, `value`, and what the source should do: `gone` from the measured CPUs,
or `fewer` by `factor`), boot parameters, advice, and an estimate of the noise
it would remove.  Interrupt, softirq, timer and work sources are here; threads
and the unexplained remainder are in rules_threads.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jitterscope.knobs import FILE_KNOBS, irq
from jitterscope.tune import kconfig
from jitterscope.tune.records import Knob, Remedy, Source
from jitterscope.units import format_cpulist

IPIS = {"reschedule", "call_function", "call_function_single", "irq_work"}
HARDWARE_VECTORS = {
    "thermal_apic",
    "threshold_apic",
    "deferred_error_apic",
    "spurious_apic",
    "error_apic",
    "platform",
    "x86_platform_ipi",
    "deferred_error",
}


@dataclass
class Ctx:
    cpus: list[int]
    housekeeping: list[int]
    virtualization: str | None
    origins: dict[str, set[str]] = field(default_factory=dict)  # work/timer function -> thread or IRQ names
    pids: dict[str, list[int]] = field(default_factory=dict)  # thread name -> pids seen
    other_task_share: float = 0.0  # of the run's time, other tasks ran on the CPUs
    move: set[str] = field(default_factory=set)  # user processes (names or pids) the user asked to move

    @property
    def hk(self) -> str:
        return format_cpulist(self.housekeeping)

    @property
    def cpus_text(self) -> str:
        return format_cpulist(self.cpus)


def knob(
    name: str, value: str, expect: str, factor: float | None = None, why: str = "", process: str | None = None
) -> Knob:
    """A runtime knob change, with its current value read now (None where it does not exist)."""
    try:
        from jitterscope.knobs import resolve

        found = resolve(name)
        current = found.read() if found.exists() else None
    except Exception:  # noqa: BLE001 - a knob this machine lacks: the plan still names it
        current = None
    entry: Knob = {
        "knob": name,
        "value": value,
        "current": current,
        "expect": expect,
        "factor": factor,
        "why": why,
    }
    if process:
        entry["process"] = process
    return entry


def out(
    action: str,
    removable: float,
    why: str,
    knobs: list[Knob] | None = None,
    boot: list[str] | None = None,
    reason: str | None = None,
) -> Remedy:
    """A remedy.  `reason` names a shared explanation (REASONS) when `why` is the same for many sources."""
    return {
        "action": action,
        "removable_ppm": removable,
        "why": REASONS.get(reason or "", why),
        "knobs": knobs or [],
        "boot": boot or [],
        "reason": reason,
    }


REASONS = {
    "ipi": (
        "inter-processor interrupts other CPUs send (wake-ups of tasks here, TLB shootdowns of memory shared "
        "with other CPUs, smp_call_function users): keep other tasks off these CPUs and share no memory "
        "mappings with them"
    ),
    "per-cpu work": (
        "per-CPU work queued on this CPU: it cannot move; remove what queues it, or run the workload "
        "at real-time priority to preempt it"
    ),
    "short-lived": (
        "processes that ran here and have ended: start them on the housekeeping CPUs (move their parent "
        "with task.PID.affinity, which they inherit; a cpuset; or CPUAffinity= in "
        "/etc/systemd/system.conf for every service)"
    ),
    "out of scope": (
        "processes outside the plan's scope (not a kernel thread, not a system daemon, not named with "
        "--move): listed, left where they are; name them with `tune plan --move NAME|PID` to move them"
    ),
    "another jitterscope": (
        "another jitterscope was measuring these CPUs at the same time (its probe spins "
        "there): measure again when it has finished"
    ),
}


def _local_timer(s: Source, ctx: Ctx) -> Remedy:
    hz = kconfig.hz() or 250
    alone = max(0.0, 1.0 - ctx.other_task_share)
    removable = s["ppm"] * (1 - 1 / hz) * alone
    why = (
        f"the scheduler tick ({hz} Hz): nohz_full stops it while only one task is runnable, leaving a 1 Hz "
        f"residual; other tasks ran on these CPUs {ctx.other_task_share:.1%} of the time (the tick stays on "
        f"then), so about {removable:,.0f} of its {s['ppm']:,.0f} ppm can go"
    )
    if kconfig.enabled("CONFIG_NO_HZ_FULL") is False:
        why += "; this kernel is built without CONFIG_NO_HZ_FULL, so it needs another kernel first"
    return out("boot", removable, why, boot=[f"nohz_full={ctx.cpus_text}", f"rcu_nocbs={ctx.cpus_text}"])


def irq_source(s: Source, ctx: Ctx) -> Remedy:
    name = s["name"]
    if name == "local_timer":
        return _local_timer(s, ctx)
    if name in IPIS:
        return (
            out("none", 0.0, "", reason="ipi")
            if name != "irq_work"
            else out("none", 0.0, "irq_work: deferred work other kernel code raised on this CPU (perf, printk, RCU)")
        )
        return out(
            "none",
            0.0,
            "an inter-processor interrupt other CPUs send (wake-ups of tasks here, TLB "
            "shootdowns of memory shared with other CPUs, smp_call_function users): keep other tasks off "
            "these CPUs and do not share memory mappings with them",
        )
    if name in HARDWARE_VECTORS:
        return out("none", 0.0, "a hardware or firmware interrupt: no kernel knob moves it")
    found = [i for i in irq.irqs() if name in i.actions]
    if not found:
        return out("none", 0.0, f"no IRQ named {name} on this machine now (a plan made elsewhere?)")
    i = found[0]
    if not i.movable:
        return out(
            "boot",
            s["ppm"],
            f"{i.label} is a managed IRQ: its affinity cannot change at runtime; "
            f"isolcpus=managed_irq keeps it off isolated CPUs when others can serve it",
            boot=[f"isolcpus=managed_irq,domain,{ctx.cpus_text}"],
        )
    return out(
        "knob",
        s["ppm"],
        f"{i.label}: move it to the housekeeping CPUs",
        [knob(f"irq.{i.number}.affinity", ctx.hk, "gone", 0.0, f"{name} off CPU {ctx.cpus_text}")],
        [f"irqaffinity={ctx.hk}"],
    )


def softirq_source(s: Source, ctx: Ctx) -> Remedy:
    n, ppm = s["name"], s["ppm"]
    if n == "TIMER":
        ks = (
            [knob("kernel.timer_migration", "0", "fewer", None, "timers of idle CPUs stay there")]
            if FILE_KNOBS["kernel.timer_migration"].exists()
            else []
        )
        return out(
            "knob" if ks else "none",
            ppm * 0.5,
            "timer_list callbacks expiring here: with timer migration "
            "a busy CPU expires idle CPUs' timers too; the rest are timers armed on this CPU (see its "
            "functions)",
            ks,
        )
    if n == "RCU":
        return out(
            "boot",
            ppm * 0.9,
            "RCU callbacks and grace-period work: rcu_nocbs offloads the callbacks to "
            "rcuo kthreads on the housekeeping CPUs",
            boot=[f"rcu_nocbs={ctx.cpus_text}", "rcu_nocb_poll"],
        )
    if n == "SCHED":
        return out(
            "boot",
            ppm * 0.9,
            "scheduler load balancing: CPUs outside the scheduler domains (isolcpus=domain, "
            "or a cgroup v2 isolated cpuset partition) are not balanced",
            boot=[f"isolcpus=managed_irq,domain,{ctx.cpus_text}"],
        )
    if n in ("NET_RX", "NET_TX", "TASKLET", "HI"):
        return out(
            "knob",
            ppm * 0.5,
            "follows the interrupts of the device that raised it (and RPS for network)",
            [knob("irq.*.affinity", ctx.hk, "fewer", None, "device interrupts off these CPUs")],
        )
    if n in ("BLOCK", "IRQ_POLL"):
        return out(
            "boot",
            ppm,
            "block I/O completions follow the block device's (managed) IRQ and the CPU that issued the I/O",
            boot=[f"isolcpus=managed_irq,domain,{ctx.cpus_text}"],
        )
    return out("none", 0.0, f"{n} softirq: raised by work on this CPU (see what ran before it in the chains)")


WORK = {  # function -> (knob or boot, value, expectation, why)
    "vmstat_update": ("vm.stat_interval", "10", "fewer", "per-CPU VM statistics folded every stat_interval s"),
    "psi_avgs_work": ("boot", "psi=0", "gone", "pressure-stall averages every 2 s"),
    "wb_workfn": ("workqueue.writeback.cpumask", None, "gone", "writeback (unbound workqueue)"),
    "blk_mq_run_work_fn": ("boot", "isolcpus=managed_irq,domain,{cpus}", "gone", "block queue runs on its CPU"),
    "khugepaged_do_scan": ("mm.thp.enabled", "never", "gone", "khugepaged"),
}
PER_CPU_WORK = {
    "lru_add_drain_per_cpu",
    "drain_local_pages_wq",
    "flush_memcg_stats_dwork",
    "vmstat_shepherd",
    "refresh_vm_stats",
    "mmdrop_async_fn",
    "sync_rcu_do_polled_gp",
}


def work_source(s: Source, ctx: Ctx) -> Remedy:
    fn, ppm = s["name"], s["ppm"]
    threads = sorted(ctx.origins.get(fn, set()))
    unbound = bool(threads) and all(t.startswith("kworker/u") for t in threads)
    if fn in WORK:
        target, value, expect, why = WORK[fn]
        if target == "boot":
            return out("boot", ppm, f"{fn}: {why}", boot=[str(value).format(cpus=ctx.cpus_text)])
        if fn == "vmstat_update":
            cur = FILE_KNOBS["vm.stat_interval"].read() if FILE_KNOBS["vm.stat_interval"].exists() else "1"
            factor = min(1.0, int(cur) / 10)
            return out(
                "knob" if factor < 1 else "none",
                ppm * (1 - factor),
                f"{fn}: {why} (now {cur} s)",
                [knob("vm.stat_interval", "10", "fewer", factor, why)] if factor < 1 else [],
            )
        return out("knob", ppm, f"{fn}: {why}", [knob(target, value or ctx.hk, expect, 0.0, why)])
    if unbound:
        return out(
            "knob",
            ppm,
            f"{fn} ran in an unbound kworker ({', '.join(threads)}): the unbound workqueues' "
            "cpumask keeps them on the housekeeping CPUs",
            [knob("workqueue.cpumask", ctx.hk, "gone", 0.0, "unbound work items off these CPUs")],
        )
    why = "queued on this CPU by code running elsewhere" if fn in PER_CPU_WORK else "queued on this CPU"
    if fn not in PER_CPU_WORK:
        return out("none", 0.0, "", reason="per-cpu work")
    return out(
        "none",
        0.0,
        f"{fn}: per-CPU work ({', '.join(threads) or 'kworker'}) {why}; it cannot move: "
        "remove what queues it, or run the workload at real-time priority to preempt it",
    )


def timer_source(s: Source, ctx: Ctx) -> Remedy:
    fn = s["name"]
    if fn == "watchdog_timer_fn":
        return out(
            "knob",
            s["ppm"],
            "the soft-lockup detector's hrtimer (every watchdog_thresh*2/5 s)",
            [knob("kernel.watchdog_cpumask", ctx.hk, "gone", 0.0, "lockup detector off these CPUs")],
            ["nowatchdog"],
        )
    if fn == "hrtimer_wakeup":
        return out(
            "none",
            0.0,
            "a task sleeping on this CPU (nanosleep, poll or futex timeout) woke up: move "
            "the task (see the thread sources)",
        )
    return out("none", 0.0, f"hrtimer callback {fn}: armed by code on this CPU")
