"""Size guards: work whose memory or time grows with an option is estimated and
refused in one line, naming the option to change, before it starts.

    check("trace-driven simulation of 1e6 nodes", bytes_=mem, seconds=secs,
          hint="for more nodes use --noise fit:RUN")

Memory may use half of what the kernel reports available (the rest belongs to
whatever else runs on a shared node); time is bounded by `TIME_LIMIT_S` unless
the caller passes its own (e.g. ptts --max-time).
"""

from __future__ import annotations

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
