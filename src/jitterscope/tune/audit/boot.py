"""Boot parameters: what the kernel command line does for the CPUs to isolate (kernel-parameters.txt)."""

from __future__ import annotations

from pathlib import Path

from jitterscope import sysinfo
from jitterscope.knobs import FILE_KNOBS
from jitterscope.tune import cmdline, kconfig
from jitterscope.tune.audit.finding import NOT, OK, UNKNOWN, Context, Finding
from jitterscope.units import format_cpulist, parse_cpulist

SRC = "/proc/cmdline"
MODULE = Path("/sys/module")
MCE = Path("/sys/devices/system/machinecheck/machinecheck0")
CPUFREQ = Path("/sys/devices/system/cpu")
# cpufreq driver or CPU vendor -> the boot parameter that keeps that vendor's P-state driver out
PSTATE = {
    "intel_pstate": "intel_pstate",
    "intel_cpufreq": "intel_pstate",
    "amd-pstate": "amd_pstate",
    "amd-pstate-epp": "amd_pstate",
    "GenuineIntel": "intel_pstate",
    "AuthenticAMD": "amd_pstate",
    "HygonGenuine": "amd_pstate",
}


def _f(knob: str, cmd: cmdline.Cmdline, rec: str, verdict: str, why: str, fix: str | None = None) -> Finding:
    v = cmd.get(knob)
    value = "(absent)" if not cmd.has(knob) else (f"{knob}={v}" if v is not None else knob)
    return Finding("boot", knob, value, rec, "boot", SRC, verdict, why, fix if verdict != OK else None)


def _read(p: Path) -> str | None:
    try:
        return p.read_text().strip()
    except OSError:
        return None


def _param(cmd: cmdline.Cmdline, name: str) -> str | None:
    """A module parameter's value: the command line's, else what the kernel reports now."""
    v = cmd.get(name)
    if v is not None:
        return v
    module, _, param = name.partition(".")
    return _read(MODULE / module / "parameters" / param)


def _runtime(name: str) -> str | None:
    k = FILE_KNOBS[name]
    try:
        return k.read() if k.exists() else None
    except OSError:
        return None


def _cpu_params(ctx: Context, cmd: cmdline.Cmdline) -> list[Finding]:
    out = []
    iso_flags, iso = cmdline.isolcpus(cmd.get("isolcpus"), ctx.nr_cpus)
    rec = f"isolcpus=managed_irq,domain,{ctx.cpus_text}"
    miss = sorted(set(ctx.cpus) - set(iso))
    out.append(
        _f(
            "isolcpus",
            cmd,
            rec,
            OK if not miss and "managed_irq" in iso_flags else NOT,
            f"CPU {format_cpulist(miss)} not isolated from the scheduler's domains"
            if miss
            else (
                "managed IRQs (driver-spread queues) may still land on them: add the managed_irq flag"
                if "managed_irq" not in iso_flags
                else "isolated (flags: " + ",".join(iso_flags) + ")"
            ),
            rec,
        )
    )
    nohz = cmdline.cpus_of(cmd, "nohz_full", ctx.nr_cpus)
    rec = f"nohz_full={ctx.cpus_text}"
    built = kconfig.enabled("CONFIG_NO_HZ_FULL")
    if built is False:
        why = (
            "this kernel is built without CONFIG_NO_HZ_FULL: the tick cannot stop on a busy CPU (needs another kernel)"
        )
    elif cmd.get("nohz") == "off":
        why = "nohz=off voids nohz_full"
    else:
        why = (
            "the tick stops while one task runs"
            if set(ctx.cpus) <= set(nohz)
            else f"the scheduler tick interrupts CPU {format_cpulist(sorted(set(ctx.cpus) - set(nohz)))} "
            "HZ times a second"
        )
    out.append(_f("nohz_full", cmd, rec, OK if set(ctx.cpus) <= set(nohz) and built else NOT, why, rec))
    idle_nohz = cmd.get("nohz") != "off" and kconfig.enabled("CONFIG_NO_HZ_COMMON") is not False
    out.append(
        _f(
            "nohz",
            cmd,
            "nohz=on (the default)",
            OK if idle_nohz else NOT,
            "the tick stops on idle CPUs" if idle_nohz else "nohz=off: the tick never stops, even on idle CPUs",
            "nohz=on",
        )
    )
    rcu = cmdline.rcu_offloaded(cmd, ctx.nr_cpus)
    rec = f"rcu_nocbs={ctx.cpus_text}"
    out.append(
        _f(
            "rcu_nocbs",
            cmd,
            rec,
            OK if set(ctx.cpus) <= set(rcu) else NOT,
            "RCU callbacks run in rcuo kthreads elsewhere"
            if set(ctx.cpus) <= set(rcu)
            else "RCU callbacks run in RCU_SOFTIRQ on the CPU (nohz_full implies rcu_nocbs)",
            rec,
        )
    )
    out.append(
        _f(
            "rcu_nocb_poll",
            cmd,
            "rcu_nocb_poll",
            OK if cmd.has("rcu_nocb_poll") else NOT,
            "offloaded CPUs need not wake the rcuog kthreads"
            if cmd.has("rcu_nocb_poll")
            else "offloaded CPUs wake the rcuog grace-period kthreads; with polling they need not",
            "rcu_nocb_poll",
        )
    )
    out += _rcu_quiet(ctx, cmd)
    for name, what in (("irqaffinity", "IRQs set up at boot"), ("kthread_cpus", "kernel threads started at boot")):
        cpus = cmdline.cpus_of(cmd, name, ctx.nr_cpus)
        rec = f"{name}={ctx.hk_text}"
        bad = ctx.touches(cpus) if cpus else ctx.cpus
        out.append(
            _f(
                name,
                cmd,
                rec,
                NOT if bad else OK,
                f"{what} may use CPU {format_cpulist(bad)}" if bad else f"{what} stay off them",
                rec,
            )
        )
    return out


def _rcu_quiet(ctx: Context, cmd: cmdline.Cmdline) -> list[Finding]:
    """Expedited grace periods IPI every CPU; RCU's patience spares a nohz_full CPU in the kernel."""
    out = []
    normal = _param(cmd, "rcupdate.rcu_normal_after_boot")
    ok = normal in ("1", "Y", "y")
    out.append(
        _f(
            "rcupdate.rcu_normal_after_boot",
            cmd,
            "rcupdate.rcu_normal_after_boot=1",
            OK if ok else (UNKNOWN if normal is None else NOT),
            "no expedited grace periods after boot"
            if ok
            else (
                "not in this kernel"
                if normal is None
                else f"now {normal}: expedited RCU grace periods (synchronize_rcu_expedited) send an IPI to every CPU"
            ),
            "rcupdate.rcu_normal_after_boot=1",
        )
    )
    delay = _param(cmd, "rcutree.nohz_full_patience_delay")
    if delay is None:
        verdict, why = UNKNOWN, "not in this kernel (6.10 and later): RCU may disturb a nohz_full CPU in the kernel"
    elif delay.lstrip("-").isdigit() and int(delay) >= 1000:
        verdict, why = OK, f"RCU waits {delay} ms before disturbing a nohz_full CPU running in the kernel"
    else:
        verdict = NOT
        why = (
            f"RCU waits {delay} ms before sending an IPI to a nohz_full CPU that stays in the kernel "
            "(a long system call): the tick restarts there"
        )
    out.append(
        _f(
            "rcutree.nohz_full_patience_delay",
            cmd,
            "rcutree.nohz_full_patience_delay=1000",
            verdict,
            why,
            "rcutree.nohz_full_patience_delay=1000",
        )
    )
    return out


def _mce(cmd: cmdline.Cmdline) -> Finding:
    """Corrected machine-check errors are polled on every CPU (check_interval, default 5 min)."""
    interval, ignore = _read(MCE / "check_interval"), _read(MCE / "ignore_ce")
    rec = "mce=ignore_ce"
    if cmd.get("mce") in ("ignore_ce", "off") or ignore == "1" or interval == "0":
        return _f("mce", cmd, rec, OK, "no polling for corrected machine-check errors")
    if interval is None:
        return _f("mce", cmd, rec, OK, "no machine-check device here (a guest, or no MCE support): nothing polls")
    return _f(
        "mce",
        cmd,
        rec,
        NOT,
        f"a timer on every CPU polls the machine-check banks for corrected errors every {interval} s "
        f"({MCE.parent}/machinecheck*/check_interval)",
        rec,
    )


def pstate_param() -> str | None:
    """The P-state driver parameter of this CPU: by the cpufreq driver present, else by the CPU's vendor."""
    driver = _read(CPUFREQ / "cpufreq/policy0/scaling_driver") or _read(CPUFREQ / "cpu0/cpufreq/scaling_driver")
    return PSTATE.get(driver or "") or PSTATE.get(sysinfo.cpu_vendor() or "")


def _watchdogs(ctx: Context, cmd: cmdline.Cmdline) -> list[Finding]:
    soft_off = (
        cmd.has("nowatchdog")
        or cmd.has("nosoftlockup")
        or _runtime("kernel.watchdog") == "0"
        or not ctx.touches(_mask(_runtime("kernel.watchdog_cpumask")))
    )
    nmi_off = cmd.get("nmi_watchdog") == "0" or cmd.has("nowatchdog") or _runtime("kernel.nmi_watchdog") in ("0", None)
    return [
        _f(
            "nowatchdog",
            cmd,
            "nowatchdog (or kernel.watchdog_cpumask without them)",
            OK if soft_off else NOT,
            "no lockup-detector hrtimer on them"
            if soft_off
            else "the soft-lockup watchdog's hrtimer fires on every CPU every watchdog_thresh*2/5 s",
            "nowatchdog",
        ),
        _f(
            "nmi_watchdog",
            cmd,
            "nmi_watchdog=0",
            OK if nmi_off else NOT,
            "no hard-lockup NMIs" if nmi_off else "the hard-lockup detector sends perf NMIs periodically",
            "nmi_watchdog=0",
        ),
    ]


def _mask(text: str | None) -> list[int]:

    return parse_cpulist(text) if text else []


def _clock_and_idle(cmd: cmdline.Cmdline) -> list[Finding]:
    out = [
        _f(
            "skew_tick",
            cmd,
            "skew_tick=1",
            OK if cmd.get("skew_tick") == "1" else NOT,
            "ticks of different CPUs are offset"
            if cmd.get("skew_tick") == "1"
            else "every CPU's tick fires at the same instant and contends for jiffies_lock",
            "skew_tick=1",
        )
    ]
    flags = sysinfo.cpu_flags()
    if sysinfo.clocksource() != "tsc" or not {"constant_tsc", "nonstop_tsc"} <= flags:
        out.append(
            _f(
                "tsc",
                cmd,
                "tsc=reliable (only with an invariant TSC)",
                UNKNOWN,
                "the TSC is not the clocksource or not invariant here: leave it to the kernel",
            )
        )
    else:
        ok = cmd.get("tsc") in ("reliable", "nowatchdog")
        out.append(
            _f(
                "tsc",
                cmd,
                "tsc=reliable",
                OK if ok else NOT,
                "no clocksource watchdog checks"
                if ok
                else "the clocksource watchdog re-reads the TSC against another clock every 0.5 s",
                "tsc=reliable",
            )
        )
    virt = sysinfo.virtualization()
    pstate = pstate_param()
    for name, rec in (
        *([(pstate, f"{pstate}=disable (bare metal, fixed frequency)")] if pstate else []),
        ("processor.max_cstate", "processor.max_cstate=1"),
        ("intel_idle.max_cstate", "intel_idle.max_cstate=0"),
        ("idle", "idle=poll only for the lowest latency (burns power)"),
    ):
        if virt:
            out.append(
                _f(
                    name,
                    cmd,
                    "(host's choice)",
                    UNKNOWN,
                    f"a {virt} guest: frequency and idle states are "
                    "the host's; ask for dedicated pCPUs without deep C-states",
                )
            )
        else:
            out.append(
                _f(
                    name,
                    cmd,
                    rec,
                    OK if cmd.has(name) else UNKNOWN,
                    "set"
                    if cmd.has(name)
                    else "deep C-states add wake-up latency after idle; matters only if the workload idles",
                    rec,
                )
            )
    return out


def findings(ctx: Context) -> list[Finding]:
    cmd = cmdline.current()
    out = _cpu_params(ctx, cmd) + _watchdogs(ctx, cmd) + [_mce(cmd)] + _clock_and_idle(cmd)
    out.append(
        _f(
            "mitigations",
            cmd,
            "(a security decision)",
            UNKNOWN,
            "mitigations=off shortens every kernel entry and exit but reopens CPU vulnerabilities",
        )
    )
    audit_on = kconfig.enabled("CONFIG_AUDITSYSCALL")
    out.append(
        _f(
            "audit",
            cmd,
            "audit=0 (unless audit rules are needed)",
            OK if cmd.get("audit") == "0" or audit_on is False else UNKNOWN,
            "no syscall auditing"
            if cmd.get("audit") == "0" or audit_on is False
            else "syscall auditing adds work to every system call when rules are loaded",
            "audit=0",
        )
    )
    thp = _runtime("mm.thp.enabled")
    ok = cmd.get("transparent_hugepage") == "never" or thp in ("never", "madvise")
    out.append(
        _f(
            "transparent_hugepage",
            cmd,
            "transparent_hugepage=never",
            OK if ok else NOT,
            f"THP is {thp}: only regions that ask for huge pages get them"
            if ok
            else f"THP is {thp}: khugepaged scans and compaction stalls",
            "transparent_hugepage=never",
        )
    )
    psi_off = (
        cmd.get("psi") == "0"
        or (kconfig.enabled("CONFIG_PSI") is False)
        or (not cmd.has("psi") and kconfig.enabled("CONFIG_PSI_DEFAULT_DISABLED"))
    )
    out.append(
        _f(
            "psi",
            cmd,
            "psi=0 (unless pressure stall information is used)",
            OK if psi_off else NOT,
            "no psi_avgs_work" if psi_off else "psi_avgs_work runs in a per-CPU kworker every 2 s",
            "psi=0",
        )
    )
    return out
