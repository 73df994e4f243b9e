"""Facts about this machine recorded in every run's metadata."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Callable
from pathlib import Path

from jitterscope.errors import JitterscopeError
from jitterscope.units import parse_cpulist


def online_cpus() -> list[int]:
    try:
        return parse_cpulist(Path("/sys/devices/system/cpu/online").read_text().strip())
    except (OSError, JitterscopeError):
        return sorted(os.sched_getaffinity(0))


def default_cpus() -> list[int]:
    """Every online CPU but the lowest, which stays free for the tool's own work."""
    cpus = online_cpus()
    return cpus[1:] if len(cpus) > 1 else cpus


def check_cpus(cpus: list[int]) -> None:
    online = set(online_cpus())
    bad = [c for c in cpus if c not in online]
    if bad:
        possible = Path("/sys/devices/system/cpu/possible")
        kind = (
            "offline"
            if possible.exists() and all(c in parse_cpulist(possible.read_text().strip()) for c in bad)
            else "out of range"
        )
        raise JitterscopeError(f"CPU {','.join(map(str, bad))} {kind}: online CPUs are {_fmt(sorted(online))}")
    allowed = os.sched_getaffinity(0)
    denied = [c for c in cpus if c not in allowed]
    if denied:
        raise JitterscopeError(
            f"CPU {','.join(map(str, denied))} not in this process's allowed CPUs "
            f"({_fmt(sorted(allowed))}; a cgroup cpuset or taskset restricts it)"
        )


def _fmt(cpus: list[int]) -> str:
    from jitterscope.units import format_cpulist

    return format_cpulist(cpus)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_vendor() -> str | None:
    """/proc/cpuinfo's vendor_id (GenuineIntel, AuthenticAMD, ...), None where it has none (e.g. arm64)."""
    try:
        m = re.search(r"^vendor_id\s*:\s*(\S+)", Path("/proc/cpuinfo").read_text(), re.M)
    except OSError:
        return None
    return m.group(1) if m else None


def cpu_flags() -> set[str]:
    """The CPU feature flags of /proc/cpuinfo (e.g. constant_tsc, nonstop_tsc, hypervisor)."""
    try:
        m = re.search(r"^flags\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
    except OSError:
        return set()
    return set(m.group(1).split()) if m else set()


def clocksource() -> str:
    try:
        return Path("/sys/devices/system/clocksource/clocksource0/current_clocksource").read_text().strip()
    except OSError:
        return "unknown"


def virtualization() -> str | None:
    """The hypervisor's name, or None on bare metal (as far as can be told)."""
    for p in ("/sys/hypervisor/type",):
        try:
            t = Path(p).read_text().strip()
            if t:
                return t
        except OSError:
            pass
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    if not re.search(r"^flags\s*:.*\bhypervisor\b", cpuinfo, re.M):
        return None
    try:
        vendor = Path("/sys/class/dmi/id/sys_vendor").read_text().strip().lower()
        product = Path("/sys/class/dmi/id/product_name").read_text().strip().lower()
    except OSError:
        vendor = product = ""
    for key, name in (
        ("qemu", "kvm"),
        ("kvm", "kvm"),
        ("vmware", "vmware"),
        ("microsoft", "hyperv"),
        ("xen", "xen"),
        ("amazon", "kvm"),
        ("google", "kvm"),
        ("firecracker", "kvm"),
    ):
        if key in vendor or key in product:
            return name
    return "kvm" if Path("/sys/bus/pci/drivers/virtio-pci").exists() else "unknown-hypervisor"


def steal_ticks(cpus: list[int]) -> dict[int, int]:
    """Per-CPU steal time from /proc/stat, in USER_HZ ticks."""
    out: dict[int, int] = {}
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            m = re.match(r"^cpu(\d+)\s+(.*)$", line)
            if m and int(m.group(1)) in cpus:
                fields = m.group(2).split()
                out[int(m.group(1))] = int(fields[7]) if len(fields) > 7 else 0
    except OSError:
        pass
    return out


def boot_id() -> str | None:
    """This boot's random id (changes at every boot: runtime settings from before are gone)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def thread_ids(pid: int | None) -> set[int]:
    """The thread ids of process `pid` (just `pid` once its /proc entry is gone; none for no pid)."""
    if not pid:
        return set()
    try:
        return {int(t) for t in os.listdir(f"/proc/{pid}/task")}
    except OSError:
        return {int(pid)}


def move_threads(keep: Callable[[set[int]], set[int]]) -> dict[int, set[int]]:
    """Give every thread of this process the CPU mask `keep(its mask)` (an affinity is per thread:
    moving only the calling one left a helper thread free to run where the probe measures); a thread
    whose new mask would be empty stays as it is.  Their masks before, for `restore_affinities`."""
    before: dict[int, set[int]] = {}
    for tid in thread_ids(os.getpid()):
        try:
            mask = os.sched_getaffinity(tid)
            new = keep(mask)
            if new and new != mask:
                os.sched_setaffinity(tid, new)
                before[tid] = mask
        except OSError:
            pass  # the thread ended meanwhile
    return before


def leave_cpus(cpus: set[int]) -> dict[int, set[int]]:
    """Every thread of this process off `cpus`, where another CPU is allowed (move_threads)."""
    return move_threads(lambda mask: mask - cpus)


def restore_affinities(before: dict[int, set[int]]) -> None:
    for tid, mask in before.items():
        try:
            os.sched_setaffinity(tid, mask)
        except OSError:
            pass  # the thread ended meanwhile


def tree_thread_ids(pid: int) -> set[int]:
    """The thread ids of process `pid` and of every process it started that is still running, and theirs
    (read from /proc/PID/task/TID/children, so a process forked by any thread is found)."""
    tids: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        threads = thread_ids(p) - tids
        tids |= threads
        for t in threads:
            try:
                todo += [int(c) for c in Path(f"/proc/{p}/task/{t}/children").read_text().split()]
            except (OSError, ValueError):
                pass
    return tids


def user_hz() -> int:
    return os.sysconf("SC_CLK_TCK")


def host() -> str:
    return platform.node()


def kernel() -> str:
    return platform.release()


def fair_server() -> bool:
    """Whether this kernel has the fair server (Linux 6.12 on): ordinary tasks waiting on a CPU that real-time
    tasks keep busy run for up to 50 ms a second (sched/fair_server/cpuN in debugfs), whatever
    sched_rt_runtime_us says."""
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    if m is None:
        return False
    return (int(m.group(1)), int(m.group(2))) >= (6, 12)


def rt_throttle_us() -> tuple[int, int] | None:
    """(runtime, period) of the kernel's real-time throttling, or None when it is off or unreadable.

    A SCHED_FIFO task that never sleeps loses period - runtime of every period (50 ms per second by
    default): the kernel runs other tasks, or idles, meanwhile (Documentation/scheduler/sched-rt-group.rst)."""
    try:
        runtime = int(Path("/proc/sys/kernel/sched_rt_runtime_us").read_text())
        period = int(Path("/proc/sys/kernel/sched_rt_period_us").read_text())
    except (OSError, ValueError):
        return None
    return (runtime, period) if 0 <= runtime < period else None
