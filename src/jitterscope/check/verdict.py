"""Judge one short measurement: limits on noise, worst detour, p99 and unexplained share, and compare's
regression test against a baseline run.  Plain data in, a `Verdict` out (render.py prints it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jitterscope.compare.results import Comparison
from jitterscope.humanize import duration_ns, percent


@dataclass(frozen=True)
class Limits:
    """What a healthy CPU stays within (None: not checked)."""

    max_noise: float | None = None  # share of time (0-1), per CPU
    max_detour_ns: float | None = None  # longest detour on any CPU
    max_p99_ns: float | None = None  # 99th percentile detour on any CPU
    max_unexplained: float | None = None  # share (0-1) of all noise that no traced activity explains

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.max_noise, self.max_detour_ns, self.max_p99_ns, self.max_unexplained))


@dataclass
class CpuFigures:
    noise_ppm: float
    detours: int
    p99_ns: float
    max_ns: float


@dataclass
class Verdict:
    healthy: bool
    cpus: dict[int, CpuFigures]
    duration_s: float
    unexplained_share: float | None  # None without tracing
    lost_events: int
    limits: Limits
    problems: list[str] = field(default_factory=list)  # one short phrase per limit broken or regression
    baseline: str | None = None
    regressions: list[str] = field(default_factory=list)  # compare's wording, when a baseline was given
    notes: list[str] = field(default_factory=list)  # what the comparison could not test
    run: str | None = None  # the check's own run directory, when kept (--out)

    @property
    def status(self) -> str:
        return "OK" if self.healthy else "UNHEALTHY"


def _worst(cpus: dict[int, CpuFigures], attr: str) -> tuple[int, float]:
    cpu = max(cpus, key=lambda c: getattr(cpus[c], attr))
    return cpu, float(getattr(cpus[cpu], attr))


def judge(summary: dict[str, Any], limits: Limits, comparison: Comparison | None = None) -> Verdict:
    """The verdict on one run's summary.json, with `compare_loaded`'s result against the baseline if any."""
    cpus = {
        int(c): CpuFigures(
            noise_ppm=float(v.get("noise_ppm", 0.0)),
            detours=int(v.get("detours", 0)),
            p99_ns=float(v.get("p99_ns", 0.0)),
            max_ns=float(v.get("max_ns", 0.0)),
        )
        for c, v in (summary.get("cpus") or {}).items()
    }
    traced = bool(summary.get("run", {}).get("tracing", True)) and summary.get("unexplained") is not None
    unexplained = float((summary.get("unexplained") or {}).get("share", 0.0)) if traced else None
    problems: list[str] = []
    if limits.max_noise is not None:
        problems += [
            f"CPU {c} noise {percent(f.noise_ppm / 1e6)} > {percent(limits.max_noise)}"
            for c, f in cpus.items()
            if f.noise_ppm / 1e6 > limits.max_noise
        ]
    if limits.max_detour_ns is not None:
        problems += [
            f"CPU {c} detour {duration_ns(f.max_ns)} > {duration_ns(limits.max_detour_ns)}"
            for c, f in cpus.items()
            if f.max_ns > limits.max_detour_ns
        ]
    if limits.max_p99_ns is not None:
        problems += [
            f"CPU {c} p99 {duration_ns(f.p99_ns)} > {duration_ns(limits.max_p99_ns)}"
            for c, f in cpus.items()
            if f.p99_ns > limits.max_p99_ns
        ]
    notes: list[str] = []
    if limits.max_unexplained is not None:
        if unexplained is None:
            notes.append("unexplained share not checked: the run was not traced")
        elif unexplained > limits.max_unexplained:
            problems.append(f"unexplained {percent(unexplained)} > {percent(limits.max_unexplained)}")
    regressions: list[str] = []
    baseline = None
    if comparison is not None:
        baseline = str(comparison["runs"]["base"]["path"])
        regressions = list(comparison["regressions"])
        problems += [f"{r} vs baseline" for r in regressions]
        notes += list(comparison["not_compared"])
    return Verdict(
        healthy=not problems,
        cpus=cpus,
        duration_s=float(summary.get("run", {}).get("duration_s", 0.0)),
        unexplained_share=unexplained,
        lost_events=int(summary.get("lost_events", 0) or 0),
        limits=limits,
        problems=problems,
        baseline=baseline,
        regressions=regressions,
        notes=notes,
    )


def headline(v: Verdict) -> list[str]:
    """The figures a healthy line shows: the worst CPU's noise, detour and p99, and the unexplained share."""
    if not v.cpus:
        return []
    c, noise = _worst(v.cpus, "noise_ppm")
    out = [f"noise {percent(noise / 1e6)} (CPU {c})" if len(v.cpus) > 1 else f"noise {percent(noise / 1e6)}"]
    c, worst = _worst(v.cpus, "max_ns")
    out.append(f"worst detour {duration_ns(worst)}" + (f" (CPU {c})" if len(v.cpus) > 1 else ""))
    c, p99 = _worst(v.cpus, "p99_ns")
    out.append(f"p99 {duration_ns(p99)}" + (f" (CPU {c})" if len(v.cpus) > 1 else ""))
    if v.unexplained_share is not None:
        out.append(f"unexplained {percent(v.unexplained_share)}")
    return out
