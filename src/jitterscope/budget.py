"""Size guards: work whose memory or time grows with an option is estimated and
refused in one line, naming the option to change, before it starts.

    check("trace-driven simulation of 1e6 nodes", bytes_=mem, seconds=secs,
          hint="for more nodes use --noise fit:RUN")

Memory may use half of what the kernel reports available (the rest belongs to
whatever else runs on a shared node); time is bounded by `TIME_LIMIT_S` unless
the caller passes its own (e.g. ptts --max-time).  Disk: what a run will write
must fit in what the file system holding it has free (`check_disk`).
"""

from __future__ import annotations

import os
from pathlib import Path

from jitterscope.errors import JitterscopeError
from jitterscope.humanize import seconds

TIME_LIMIT_S = 600.0


def mem_available() -> int:
    """Bytes the kernel reports available (MemAvailable), 4 GiB if it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 << 30


def fmt_time(s: float) -> str:
    return seconds(s)


def fits(bytes_: float, seconds: float, time_limit_s: float = TIME_LIMIT_S) -> bool:
    return bytes_ <= mem_available() // 2 and seconds <= time_limit_s


def check(what: str, bytes_: float, seconds: float, hint: str, time_limit_s: float = TIME_LIMIT_S) -> None:
    """Raise one line if `what` needs more than half the available memory or `time_limit_s`."""
    avail = mem_available()
    if bytes_ > avail // 2:
        raise JitterscopeError(f"{what} needs ~{bytes_ / 2**30:.3g} GiB ({avail / 2**30:.3g} GiB available); {hint}")
    if seconds > time_limit_s:
        raise JitterscopeError(f"{what} would take ~{fmt_time(seconds)} here (limit {fmt_time(time_limit_s)}); {hint}")


def disk_free(path: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system that holds `path` (or would, once created)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    st = os.statvfs(p)
    return st.f_bavail * st.f_frsize


def check_disk(what: str, bytes_: float, path: Path, hint: str) -> None:
    """Raise one line, with the estimate, if `what` would write more than the disk holding `path` has free."""
    free = disk_free(path)
    if bytes_ > free:
        raise JitterscopeError(
            f"{what} would write ~{_size(bytes_)}, more than the {_size(free)} free where it goes ({path}); {hint}"
        )


def _size(b: float) -> str:
    for unit, k in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if b >= k:
            return f"{b / k:.3g} {unit}"
    return f"{b / 2**10:.3g} KiB"
