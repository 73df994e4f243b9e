"""Per-task hardware counters for OBS-M (spec B.1): cycles, LLC misses, instructions, LLC references.

One counter group per thread through perf_event_open(2) (pid = the thread,
cpu = -1: the counts follow the thread across CPUs and context switches; the
kernel saves and restores them at each switch, which is OBS-M's snapshot), read
with PERF_FORMAT_GROUP.  Generic hardware events: PERF_COUNT_HW_CACHE_MISSES is
the kernel's last-level-cache miss event on x86 and arm64.  Where the CPU has no
PMU (a VM like ours) `status()` says why and placement uses a stand-in weight.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

PERF_TYPE_HARDWARE = 0
HW_CYCLES, HW_INSTRUCTIONS, HW_CACHE_REFERENCES, HW_CACHE_MISSES = 0, 1, 2, 3
EVENTS = (HW_CYCLES, HW_CACHE_MISSES, HW_INSTRUCTIONS, HW_CACHE_REFERENCES)  # the leader first
PERF_FORMAT_GROUP = 1 << 3
EXCLUDE_KERNEL, EXCLUDE_HV = 1 << 5, 1 << 6
ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7
NR = {"x86_64": 298, "aarch64": 241, "riscv64": 241, "ppc64le": 319, "s390x": 331}

_libc = ctypes.CDLL(None, use_errno=True)


def _attr(config: int) -> bytes:
    a = bytearray(ATTR_SIZE)
    struct.pack_into(
        "<IIQQQQQ", a, 0, PERF_TYPE_HARDWARE, ATTR_SIZE, config, 0, 0, PERF_FORMAT_GROUP, EXCLUDE_KERNEL | EXCLUDE_HV
    )
    return bytes(a)


def _open(config: int, tid: int, group_fd: int) -> int:
    nr = NR.get(platform.machine())
    if nr is None:
        raise OSError(0, f"perf_event_open is not wired for {platform.machine()}")
    buf = ctypes.create_string_buffer(_attr(config), ATTR_SIZE)
    fd = _libc.syscall(nr, buf, tid, -1, group_fd, 0)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(fd)


class Counters:
    """The counter groups of one process's threads; `read()` sums them: (cycles, misses, instr, refs)."""

    def __init__(self, tids: list[int]) -> None:
        self.leaders: list[int] = []
        self.fds: list[int] = []
        try:
            for tid in tids:
                lead = _open(EVENTS[0], tid, -1)
                self.leaders.append(lead)
                self.fds.append(lead)
                self.fds += [_open(e, tid, lead) for e in EVENTS[1:]]
        except OSError:
            self.close()
            raise

    def read(self) -> tuple[int, int, int, int]:
        tot = [0, 0, 0, 0]
        for fd in self.leaders:
            data = os.read(fd, 8 * (1 + len(EVENTS)))
            vals = struct.unpack(f"<{1 + len(EVENTS)}Q", data)[1:]
            tot = [a + b for a, b in zip(tot, vals)]
        return tot[0], tot[1], tot[2], tot[3]

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds, self.leaders = [], []


def status() -> tuple[bool, str]:
    """Whether this machine counts cycles and LLC misses per task, and if not why."""
    try:
        Counters([os.getpid()]).close()
        return True, "hardware PMU: cycles, LLC misses, instructions, LLC references per task"
    except OSError as err:
        return False, f"no hardware PMU counters here (perf_event_open: {err.strerror or err})"
