"""The one line `jitterscope check` prints: status, figures or problems, and Nagios-style performance data."""

from __future__ import annotations

from jitterscope.check.verdict import Verdict, headline
from jitterscope.humanize import seconds
from jitterscope.units import format_cpulist


def _perf(label: str, value: float, unit: str, limit: float | None) -> str:
    # Nagios plugin perfdata: label=value[UOM];warn — the limit goes in the warning slot, as exit 1 is WARNING there
    return f"{label}={value:.6g}{unit};" + ("" if limit is None else f"{limit:.6g}")


def perfdata(v: Verdict) -> str:
    if not v.cpus:
        return ""
    lim = v.limits
    parts = [
        _perf(
            "noise",
            max(f.noise_ppm for f in v.cpus.values()) / 1e4,
            "%",
            None if lim.max_noise is None else lim.max_noise * 100,
        ),
        _perf(
            "max_detour",
            max(f.max_ns for f in v.cpus.values()) / 1e9,
            "s",
            None if lim.max_detour_ns is None else lim.max_detour_ns / 1e9,
        ),
        _perf(
            "p99",
            max(f.p99_ns for f in v.cpus.values()) / 1e9,
            "s",
            None if lim.max_p99_ns is None else lim.max_p99_ns / 1e9,
        ),
    ]
    if v.unexplained_share is not None:
        limit = None if lim.max_unexplained is None else lim.max_unexplained * 100
        parts.append(_perf("unexplained", v.unexplained_share * 100, "%", limit))
    parts.append(f"regressions={len(v.regressions)}")
    return " ".join(parts)


def render_line(v: Verdict) -> str:
    """`JITTERSCOPE OK - CPU 1, 2.01 s: noise 7.02%, ... | perfdata` (UNHEALTHY lists what failed instead)."""
    where = f"CPU {format_cpulist(sorted(v.cpus))}, {seconds(v.duration_s)}"
    if v.healthy:
        text = ", ".join(headline(v))
        if v.baseline is not None:
            text += f"; no regression vs baseline {v.baseline}"
    else:
        text = "; ".join(v.problems)
        if v.baseline is not None and v.regressions:
            text += f" ({v.baseline})"
    if v.lost_events:
        text += f"; {v.lost_events} trace events lost"
    perf = perfdata(v)
    return f"JITTERSCOPE {v.status} - {where}: {text}" + (f" | {perf}" if perf else "")
