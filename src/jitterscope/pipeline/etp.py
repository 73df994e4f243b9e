"""A pipeline run's latency distribution as an execution-time profile for `jitterscope ptts`.

Chapter 5 takes each component's ETP "obtained by measurement of the latency
of a component in isolation" (the thesis L2374); a component may be "a task
graph executing on multiple processors" (L2383).  The measured per-iteration
latencies are binned up to whole ticks of `resolution` (ceil: a profile
never shorter than measured, the conservative choice, spec 003 section 5) and
written as the CSV ptts reads (`etp: {csv: FILE}`): one `time,probability`
row per value, each time with its unit so no `unit:` key is needed.  The
model using it needs the same resolution or one that divides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TypedDict

import numpy as np

from jitterscope.atomic import write_text
from jitterscope.errors import UsageError
from jitterscope.ptts.model import UNITS_NS, parse_time_ns
from jitterscope.rundir import Run, load_run


@dataclass(frozen=True)
class Profile:
    """A run's latencies binned up to whole ticks of `resolution`: each tick count and how often it occurred."""

    run: Run
    resolution: str  # as given, e.g. "10us"
    resolution_ns: Fraction
    ticks: np.ndarray
    counts: np.ndarray
    n: int
    unit: str  # the CSV's time unit


class Written(TypedDict):
    """What `pipeline etp` wrote (`--json` prints it)."""

    file: str
    run: str
    iterations: int
    resolution: str
    values: int
    min_ns: float
    max_ns: float
    mean_ns: float
    snippet: str  # the ptts model line that uses the file


DEFAULT_RESOLUTION = "10us"


def _exact(v: Fraction) -> str:
    """A decimal string of a fraction whose denominator is 2^a 5^b (ticks of a decimal resolution)."""
    if v.denominator == 1:
        return str(v.numerator)
    digits = 0
    while (v * 10**digits).denominator != 1:
        digits += 1
        if digits > 30:
            return repr(float(v))
    n = v.numerator * 10**digits // v.denominator
    sign, n = ("-" if n < 0 else ""), abs(n)
    s = str(n).rjust(digits + 1, "0")
    return f"{sign}{s[:-digits]}.{s[-digits:]}"


def _unit_of(text: str) -> str:
    for u in ("ns", "us", "µs", "ms", "s"):
        if text.strip().endswith(u):
            return "us" if u == "µs" else u
    return "ns"


def profile(run_path: str | Path, resolution: str = DEFAULT_RESOLUTION) -> Profile:
    """Binned latency profile of a pipeline run: times (Fraction ns), probabilities, and what it came from."""
    res_ns = parse_time_ns(resolution, "--resolution")
    if res_ns <= 0:
        raise UsageError(f"--resolution must be positive, got {resolution!r}")
    run = load_run(run_path, kinds=("pipeline",), purpose="pipeline etp")
    lat = run.table("iterations").column("latency_ns").to_numpy().astype(np.int64)
    if len(lat) == 0:
        raise UsageError(f"{run_path}: the run completed no iteration; nothing to export")
    num, den = res_ns.numerator, res_ns.denominator  # ticks = ceil(lat * den / num)
    ticks = -((-lat * den) // num)
    vals, counts = np.unique(ticks, return_counts=True)
    return Profile(run, resolution, res_ns, vals, counts, len(lat), _unit_of(resolution))


def write_csv(prof: Profile, out: Path) -> Written:
    unit, res_ns, n = prof.unit, prof.resolution_ns, prof.n
    run = prof.run
    r = run.summary["run"]
    lines = [
        (
            f"# jitterscope pipeline etp: {n:,} iterations of {r['graph']} ({r['heuristic']}, {r['memory']} "
            f"memory, {r['threads']} threads) from {run.path}"
        ),
        (
            f"# latency rounded up to whole ticks of {prof.resolution}; use a ptts model with this resolution "
            f"or one that divides it"
        ),
        "time,probability",
    ]
    probs = prof.counts / float(n)
    for t, p in zip(prof.ticks.tolist(), probs.tolist()):
        lines.append(f"{_exact(Fraction(int(t)) * res_ns / UNITS_NS[unit])}{unit},{p!r}")
    write_text(out, "\n".join(lines) + "\n")
    lo, hi = int(prof.ticks[0]), int(prof.ticks[-1])
    mean = float(np.dot(prof.ticks, probs)) * float(res_ns)
    return {
        "file": str(out),
        "run": str(run.path),
        "iterations": n,
        "resolution": prof.resolution,
        "values": len(prof.ticks),
        "min_ns": float(lo * res_ns),
        "max_ns": float(hi * res_ns),
        "mean_ns": mean,
        "snippet": f"etp: {{csv: {out.name}}}",
    }
