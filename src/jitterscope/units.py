"""Parse values with units: durations (`250ms`, `2.5us`), sizes, CPU lists."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from jitterscope.errors import UsageError
from jitterscope.humanize import duration_ns

DURATION_UNITS_NS = {
    "ns": 1.0,
    "us": 1e3,
    "µs": 1e3,
    "ms": 1e6,
    "s": 1e9,
    "sec": 1e9,
    "m": 60e9,
    "min": 60e9,
    "h": 3600e9,
}
NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"  # a decimal number, as text (regex)

DAY_S = 86400.0
# Every duration option's accepted range in seconds (docs/limits.md): a value
# outside is a typo or a wrong unit (`1ns` of measuring, `1e99s` of anything).
# Keyed by the option's name as commands pass it in `what`; the shared option
# readers (options.py) use the same names.
DURATION_BOUNDS: dict[str, tuple[float, float]] = {
    "--duration": (0.1, 7 * DAY_S),  # measure, cluster: the probe's own granularity is ~10 ms
    "--threshold": (1e-8, 1.0),  # smallest gap recorded as a detour
    "--interval": (0.1, DAY_S),  # monitor
    "--window": (0.1, DAY_S),  # monitor
    "--period": (1e-5, 3600.0),  # inject: a wake-up every few us would be all overhead
    "--busy": (1e-8, 3600.0),  # inject
    "--phase": (1e-6, 3600.0),  # simulate, fit, cluster bsp: the work between barriers
    "--link-latency": (0.0, 1.0),  # simulate
    "--timeout": (1.0, 7 * DAY_S),  # cluster
    "--max-time": (1e-3, 7 * DAY_S),  # ptts
    "--approximate": (1e-4, 7 * DAY_S),  # ptts
    "--max-detour": (1e-8, 3600.0),  # check
    "--max-p99": (1e-8, 3600.0),  # check
}
# Any other duration (e.g. a key in a configuration file): from 1 ns to a year.
DEFAULT_DURATION_BOUNDS = (1e-9, 366 * DAY_S)
DURATION_RE = re.compile(rf"^\s*({NUMBER})\s*([a-zµ]*)\s*$")


def parse_duration_ns(
    text: str | float,
    default_unit: str | None = None,
    what: str = "duration",
    allow_zero: bool = False,
    bounds: tuple[float, float] | None = None,
) -> float:
    """Return a duration in nanoseconds from text like `250ms`, `2.5us`, `10s`.

    A bare number needs `default_unit`; otherwise the unit is required, since a
    silent guess between seconds and nanoseconds is a factor of 10^9.  The value
    must lie within `bounds` (seconds; by default `DURATION_BOUNDS[what]`).
    """
    if isinstance(text, (int, float)):
        if default_unit is None:
            raise UsageError(f"{what} {text!r} needs a unit (e.g. 250ms, 2.5us, 10s)")
        text = f"{text}{default_unit}"
    m = DURATION_RE.match(str(text))
    if not m:
        raise UsageError(f"malformed {what} {text!r}: use a number and a unit, e.g. 250ms, 2.5us, 10s")
    value, unit = float(m.group(1)), m.group(2)
    if not unit:
        if default_unit is None:
            raise UsageError(f"{what} {text!r} needs a unit (e.g. 250ms, 2.5us, 10s)")
        unit = default_unit
    if unit not in DURATION_UNITS_NS:
        raise UsageError(f"unknown unit {unit!r} in {what} {text!r}: use ns, us, ms, s, min or h")
    ns = value * DURATION_UNITS_NS[unit]
    lo, hi = bounds or DURATION_BOUNDS.get(what, DEFAULT_DURATION_BOUNDS)
    if math.isnan(ns):
        raise UsageError(f"{what} {text!r} is not a number")
    if ns < 0 or (ns == 0 and not allow_zero):
        raise UsageError(f"{what} {text!r} must be {'non-negative' if allow_zero else 'positive'}")
    if ns and not lo * 1e9 * (1 - 1e-12) <= ns <= hi * 1e9 * (1 + 1e-12):
        raise UsageError(
            f"{what} {text!r} is too {'short' if ns < lo * 1e9 else 'long'}: use {format_s(lo)} to {format_s(hi)}"
        )
    return ns


def parse_duration_s(
    text: str | float,
    default_unit: str | None = None,
    what: str = "duration",
    allow_zero: bool = False,
    bounds: tuple[float, float] | None = None,
) -> float:
    """Like `parse_duration_ns`, in seconds."""
    return parse_duration_ns(text, default_unit, what, allow_zero, bounds) / 1e9


SHARE_UNITS = {"%": 1e-2, "ppm": 1e-6}


def parse_share(text: str, what: str = "share") -> float:
    """A share of time (0-1) from `2.5%` or `25000ppm`; the unit is required, since 1 could mean 1% or 100%."""
    m = re.fullmatch(rf"\s*({NUMBER})\s*(%|ppm)\s*", str(text))
    if not m:
        raise UsageError(f"malformed {what} {text!r}: use a percentage or ppm, e.g. 2.5% or 25000ppm")
    share = float(m.group(1)) * SHARE_UNITS[m.group(2)]
    if not 0 <= share <= 1:
        raise UsageError(f"{what} {text!r} must be from 0% to 100%")
    return share


def format_s(s: float) -> str:
    """A bound for people: 100ms, 7 days, 1ns."""
    if s >= DAY_S:
        return f"{s / DAY_S:g} days" if s != DAY_S else "1 day"
    if s >= 3600:
        return f"{s / 3600:g}h"
    if s >= 60:
        return f"{s / 60:g}min"
    for unit, f in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if s >= f or unit == "ns":
            return f"{s / f:g}{unit}"
    return f"{s}s"


def seed_arg(text: str) -> int:
    """argparse type of every --seed: an integer from 0 to 2^63-1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be an integer, got {text!r}") from None
    if not 0 <= v < 2**63:
        raise argparse.ArgumentTypeError(f"seed must be from 0 to 2^63-1, got {text}")
    return v


def count_arg(lo: int, hi: int) -> Callable[[str], int]:
    """argparse type of an integer option bounded to [lo, hi] (e.g. --replications)."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            try:
                f = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
            if math.isinf(f):  # 1e400: a number, only far too large (or small)
                raise argparse.ArgumentTypeError(f"must be from {lo:,} to {hi:,}, got {text}") from None
            if not f.is_integer():
                raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
            v = int(f)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be from {lo:,} to {hi:,}, got {text}")
        return v

    return parse


def percentile_arg(lo: float, hi: float) -> Callable[[str], float]:
    """argparse type of a percentile option in [lo, hi) (e.g. --late 99)."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a percentile, got {text!r}") from None
        if not lo <= v < hi:
            raise argparse.ArgumentTypeError(f"must be from {lo:g} to below {hi:g}, got {text}")
        return v

    return parse


def format_ns(ns: float) -> str:
    """Human-readable duration: 1.23 ms, 850 ns, 2.4 s (humanize.duration_ns: one formatter for all)."""
    return duration_ns(ns)


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}


# Every size option's accepted range in bytes (docs/limits.md); others: 1 byte to 1 TiB.
SIZE_BOUNDS: dict[str, tuple[int, int]] = {
    "--buffer": (4 << 10, 1 << 30),  # trace ring buffer per CPU: the kernel refuses more, late
    "--max-size": (1 << 20, 1 << 40),  # monitor history
}
DEFAULT_SIZE_BOUNDS = (1, 1 << 40)


def format_size(n: int) -> str:
    for unit, f in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= f:
            return f"{n / f:g}{unit}"
    return f"{n}B"


def parse_size(text: str, what: str = "size") -> int:
    """Bytes from `64K`, `32MiB`, `1g`, within `SIZE_BOUNDS[what]`."""
    m = re.match(rf"^\s*({NUMBER})\s*([a-zA-Z]*)\s*$", str(text))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise UsageError(f"malformed {what} {text!r}: use e.g. 64K, 32M, 1G")
    value = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if math.isnan(value):
        raise UsageError(f"{what} {text!r} is not a number")
    if value <= 0:
        raise UsageError(f"{what} {text!r} must be positive")
    lo, hi = SIZE_BOUNDS.get(what, DEFAULT_SIZE_BOUNDS)
    if not lo <= value <= hi:
        raise UsageError(
            f"{what} {text!r} is too {'small' if value < lo else 'large'}: use {format_size(lo)} to {format_size(hi)}"
        )
    return int(value)


# How many CPUs Linux can have at most (CONFIG_NR_CPUS tops out at 8192): the bound
# when /sys does not say, and for lists that serve other hosts (cluster --cpu-map).
MAX_CPUS_FALLBACK = 8192


def possible_cpu_limit() -> int:
    """One past the highest CPU number this machine can have (/sys/devices/system/cpu/possible)."""
    try:
        with open("/sys/devices/system/cpu/possible") as f:
            return max(_parse_cpulist(f.read().strip(), MAX_CPUS_FALLBACK, "possible CPUs")) + 1
    except (OSError, ValueError, UsageError):
        return MAX_CPUS_FALLBACK


def parse_cpulist(text: str, limit: int | None = None) -> list[int]:
    """CPUs from the kernel's list syntax: `1`, `1,3`, `2-5`, `0-7:2`.

    Every number is checked against the machine's possible CPUs (`limit`, read
    from /sys by default) before any range is expanded, so `0-99999999999` is a
    one-line error, not gigabytes of integers.
    """
    return _parse_cpulist(text, possible_cpu_limit() if limit is None else limit, "CPU list")


def _parse_cpulist(text: str, limit: int, what: str) -> list[int]:
    cpus: set[int] = set()
    if not str(text).strip():
        raise UsageError(f"empty {what}: give CPU numbers, e.g. 1, 1,3 or 2-5")
    for part in str(text).split(","):
        part = part.strip()
        m = re.match(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$", part)
        if not m:
            raise UsageError(f"malformed {what} {text!r}: use e.g. 1, 1,3 or 2-5")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        step = int(m.group(3)) if m.group(3) else 1
        if hi < lo or step < 1:
            raise UsageError(f"malformed CPU range {part!r} in {text!r}")
        if hi >= limit:
            raise UsageError(f"CPU {hi} in {text!r} does not exist: this machine has CPUs 0-{limit - 1}")
        cpus.update(range(lo, hi + 1, step))
    return sorted(cpus)


def format_cpulist(cpus: list[int]) -> str:
    """The inverse of `parse_cpulist`, compressing runs: [0,1,2,5] -> `0-2,5`."""
    out: list[str] = []
    cs = sorted(set(cpus))
    i = 0
    while i < len(cs):
        j = i
        while j + 1 < len(cs) and cs[j + 1] == cs[j] + 1:
            j += 1
        out.append(str(cs[i]) if i == j else f"{cs[i]}-{cs[j]}")
        i = j + 1
    return ",".join(out)


def format_cpumask(cpus: list[int]) -> str:
    """The kernel's bitmap syntax (tracing_cpumask, workqueue cpumask, /proc/irq/N/smp_affinity):
    32-bit hex groups, most significant first, comma-separated: [0, 1] -> `00000003`."""
    mask = 0
    for c in cpus:
        mask |= 1 << c
    groups = []
    while True:
        groups.append(f"{mask & 0xFFFFFFFF:08x}")
        mask >>= 32
        if not mask:
            break
    return ",".join(reversed(groups))


def parse_cpumask(text: str, limit: int | None = None) -> list[int]:
    """CPUs from a kernel bitmap (`3`, `00000000,00000003`, `0x3`): the inverse of `format_cpumask`.

    Masks, ranges and lists are three spellings of one set: compare them after parsing."""
    raw = str(text).strip().lower().replace(",", "")
    raw = raw.removeprefix("0x")
    if not raw or not re.fullmatch(r"[0-9a-f]+", raw):
        raise UsageError(f"malformed CPU mask {text!r}: use hex, e.g. 3 or 00000000,00000003")
    mask = int(raw, 16)
    cpus = [i for i in range(mask.bit_length()) if mask >> i & 1]
    top = possible_cpu_limit() if limit is None else limit
    if cpus and cpus[-1] >= top:
        raise UsageError(f"CPU {cpus[-1]} in mask {text!r} does not exist: this machine has CPUs 0-{top - 1}")
    return cpus


def parse_kernel_cpulist(text: str, nr_cpus: int) -> list[int]:
    """CPUs from a kernel boot parameter's list (Documentation/admin-guide/kernel-parameters.rst, "cpu lists"):
    `1,3`, `2-5`, `all`, `N` (the last CPU), and `0-15:2/4` (use 2 of every group of 4)."""
    cpus: set[int] = set()
    last = nr_cpus - 1
    for part in str(text).split(","):
        part = part.strip().replace("N", str(last))
        if part == "all":
            cpus.update(range(nr_cpus))
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+)/(\d+))?)?", part)
        if not m:
            raise UsageError(f"malformed kernel CPU list {text!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        used, group = (int(m.group(3)), int(m.group(4))) if m.group(3) else (1, 1)
        if hi < lo or group < 1 or used < 1 or used > group:
            raise UsageError(f"malformed CPU range {part!r} in kernel CPU list {text!r}")
        cpus.update(c for c in range(lo, hi + 1) if (c - lo) % group < used)
    return sorted(cpus)


MAX_LIST_VALUES = 10_000  # values in one count list (each is a separate computation)
MAX_LIST_VALUE = 1e12  # a count beyond this is a typo (nodes, phases)


def parse_count_list(text: str, what: str = "list") -> list[int]:
    """Integers from `1,10,100`, `1..1e6:log10` (one per decade) or `1..64:x2`.

    Ranges also accept `:+K` for a linear step.
    """
    values: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        m = re.match(rf"^({NUMBER})\.\.({NUMBER})(?::(log10|x{NUMBER}|\+{NUMBER}))?$", part)
        if m:
            lo, hi = float(m.group(1)), float(m.group(2))
            step = m.group(3) or "+1"
            if lo <= 0 or hi < lo:
                raise UsageError(f"bad range {part!r} in {what}: need 0 < start <= end")
            if hi > MAX_LIST_VALUE:
                raise UsageError(f"{what} value {m.group(2)} is beyond {MAX_LIST_VALUE:.0e}")
            if step == "log10":
                k = 0
                while lo * 10**k <= hi * (1 + 1e-12):
                    values.append(int(round(lo * 10**k)))
                    k += 1
            elif step.startswith("x"):
                f = float(step[1:])
                if f <= 1:
                    raise UsageError(f"bad multiplier {step!r} in {what}: must exceed 1")
                v = lo
                while v <= hi * (1 + 1e-12):
                    values.append(int(round(v)))
                    v *= f
            else:
                d = float(step[1:])
                if d <= 0:
                    raise UsageError(f"bad step {step!r} in {what}: must be positive")
                if (hi - lo) / d + 1 > MAX_LIST_VALUES:
                    raise UsageError(
                        f"range {part!r} in {what} has {(hi - lo) / d + 1:.3g} values; "
                        f"at most {MAX_LIST_VALUES:,} (use :log10 or :x2)"
                    )
                v = lo
                while v <= hi * (1 + 1e-12):
                    values.append(int(round(v)))
                    v += d
            continue
        try:
            f = float(part)
        except ValueError:
            raise UsageError(f"malformed {what} {text!r}: use e.g. 1,10,100 or 1..1e6:log10") from None
        if f > MAX_LIST_VALUE:  # also 1e400 (inf)
            raise UsageError(f"{what} value {part} is beyond {MAX_LIST_VALUE:.0e}")
        if not math.isfinite(f) or f <= 0 or f != int(f):
            raise UsageError(f"{what} values must be positive integers, got {part!r}")
        values.append(int(f))
    if len(values) > MAX_LIST_VALUES:
        raise UsageError(f"{what} has {len(values):,} values; at most {MAX_LIST_VALUES:,}")
    return sorted(set(values))
