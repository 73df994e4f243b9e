"""An execution-time profile from a jitterscope run directory (`etp: {run: DIR, ...}`).

What is taken: the detour timeline of one measured CPU (`detours.parquet`:
`start_ns`, `duration_ns` of every detour on that CPU, see docs/run-format.md)
and the run's length (`meta.duration_s`).  A component that needs `base` of CPU
time and starts at an instant s of that timeline finishes at the first instant
by which it has had `base` of CPU time; the detours that start before it is
done (and the rest of one in progress at s) stretch it:

    wall(s) = base + time stolen by detours in [s, s + wall(s))

The profile is the distribution of wall(s) over `samples` start instants spread
evenly across the run (default 100,000), keeping only executions that end
inside the measured run; each wall time is rounded to the model's resolution
(to the nearest tick by default, `round: up` for never shorter than measured).
Using the timeline rather than only the detour-duration histogram keeps what
the histogram loses: how often detours come and how they cluster (a 4 ms tick,
a daemon's burst), so a long `base` collects several detours as it would have.
Detours below the run's threshold are not in the run and not in the profile.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from jitterscope.errors import JitterscopeError
from jitterscope.ptts.etp import ETP, EtpSpec, ModelError, parse_time_ns
from jitterscope.rundir import Run, load_run


def wall_times_ns(starts: np.ndarray, durations: np.ndarray, run_ns: int, base_ns: int, samples: int) -> np.ndarray:
    """Wall time of `base_ns` of work started at `samples` evenly spread instants.

    `starts`, `durations` describe non-overlapping detours sorted by start (ns).
    Available CPU time avail(t) = t - stolen(0, t) is flat during a detour, so
    the finish of work started at s is the first tau with avail(tau) = avail(s)
    + base: tau = A + (sum of durations of detours whose flat level is below A).
    """
    starts = np.asarray(starts, dtype=np.int64)
    durations = np.asarray(durations, dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    starts, durations = starts[order], durations[order]
    # stolen time is the union of the detours: the probe's gaps do not overlap, but the conversion
    # of TSC to ns can make one end a nanosecond after the next starts
    if len(starts) > 1:
        ends = starts + durations
        prev_end = np.concatenate([[np.iinfo(np.int64).min], np.maximum.accumulate(ends)[:-1]])
        starts = np.maximum(starts, prev_end)
        durations = np.maximum(ends - starts, 0)
        keep = durations > 0
        starts, durations = starts[keep], durations[keep]
    stolen_before = np.concatenate([[0], np.cumsum(durations)])  # S_j: stolen by detours 0..j-1
    level = starts - stolen_before[:-1]  # avail(start_j) = a_j
    last_start = run_ns - base_ns
    if last_start <= 0:
        raise ModelError(f"run: the run ({run_ns / 1e9:.3g} s) is shorter than the base execution time")
    s = np.linspace(0, last_start, num=samples, endpoint=False).astype(np.int64)
    if len(starts) == 0:
        return np.full(len(s), base_ns, dtype=np.int64)
    # avail(s): number of detours starting at or before s, and whether s is inside the last of them
    j = np.searchsorted(starts, s, side="right")
    inside = (j > 0) & (s < (starts[np.maximum(j - 1, 0)] + durations[np.maximum(j - 1, 0)]))
    avail_s = np.where(inside, level[np.maximum(j - 1, 0)], s - stolen_before[j])
    target = avail_s + base_ns
    m = np.searchsorted(level, target, side="left")  # detours with level < target are passed
    tau = target + stolen_before[m]
    wall = tau - s
    return wall[tau <= run_ns]


def _one_machine(run: Run, node: Any, where: str) -> Run:
    """The run itself, or (a cluster run) the node named by `node: HOST:CPU`: one machine's noise."""
    nodes = run.node_runs()
    if nodes[0][1] is run:
        if node is not None:
            raise ModelError(f"{where}.node: only for a cluster run; this run measured one machine (use cpu: N)")
        return run
    labels = [label for label, _ in nodes]
    if node is None and len(nodes) == 1:
        return nodes[0][1]
    if node is None or str(node) not in labels:
        shown = ", ".join(labels[:8]) + (" ..." if len(labels) > 8 else "")
        what = "say which one" if node is None else f"{node!r} is not one of them"
        raise ModelError(f"{where}.node: a cluster run of {len(labels)} nodes ({shown}); {what} (node: HOST:CPU)")
    return dict(nodes)[str(node)]


def etp_from_run(path: Path, opts: EtpSpec, res_ns: Fraction, where: str) -> ETP:
    try:
        run = load_run(path, kinds=("measure", "cluster"), purpose="a ptts run profile")
    except JitterscopeError as err:
        raise ModelError(f"{where}.run: {err}") from None
    given = opts.model_fields_set
    if "base" not in given:
        raise ModelError(
            f"{where}.base: missing; a run gives the noise, the base is the component's "
            f"own execution time without it (e.g. base: 11ms)"
        )
    base = parse_time_ns(opts.base, f"{where}.base")
    if base <= 0:
        raise ModelError(f"{where}.base: must be positive")
    run = _one_machine(run, opts.node, where)
    cpus = run.cpus
    cpu = opts.cpu
    if cpu is None:
        if len(cpus) != 1:
            raise ModelError(f"{where}.cpu: the run measured CPUs {cpus}; say which one (cpu: N)")
        cpu = cpus[0]
    if isinstance(cpu, bool) or not isinstance(cpu, int) or cpu not in cpus:
        raise ModelError(f"{where}.cpu: {cpu!r} is not a CPU of the run (measured: {cpus})")
    samples = opts.samples if "samples" in given else 100_000
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= 10_000_000:
        raise ModelError(f"{where}.samples: give a whole number of start instants in 1..10000000")
    rounding = opts.round if "round" in given else "nearest"
    if rounding not in ("nearest", "up"):
        raise ModelError(f"{where}.round: give nearest or up")
    _, starts, durs = run.detour_arrays(cpu=cpu)
    if np.any(durs < 0):
        raise ModelError(f"{where}.run: negative detour durations in {path}")
    base_ns = int(round(float(base)))
    try:
        wall = wall_times_ns(starts, durs, run.duration_ns, base_ns, samples)
    except ModelError as err:
        raise ModelError(f"{where}.{err}") from None
    if len(wall) == 0:
        raise ModelError(f"{where}.run: no execution of {base_ns} ns fits inside the run")
    # to ticks
    r = Fraction(res_ns)
    if r.denominator == 1 and r.numerator == 1:
        ticks = wall.astype(np.int64)
    else:
        num, den = r.numerator, r.denominator  # ticks = wall * den / num
        x = wall.astype(np.int64) * den
        if rounding == "up":
            ticks = -((-x) // num)
        else:
            ticks = (2 * x + num) // (2 * num)
    vals, counts = np.unique(ticks.astype(np.int64), return_counts=True)
    etp = ETP(
        vals,
        counts / counts.sum(),
        source=f"run {path.name} cpu {cpu}: base {base_ns} ns + measured noise, {len(wall)} starts",
    )
    return etp
