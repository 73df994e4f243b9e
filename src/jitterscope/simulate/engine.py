"""Library entry points: simulate a job under a noise spec, fit a run, rank sources.

from jitterscope.simulate import Job, parse_noise, simulate, fit_run, by_source
sim = simulate(parse_noise("normal(mean=1.91ms,sd=0.36ms)"), Job((1, 1000), (100,), 10e-3))
sim.point(1000, 100).runtime_s
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitterscope import budget
from jitterscope.errors import JitterscopeError
from jitterscope.humanize import count, number, seconds
from jitterscope.simulate.detours import Detours, detours_from_lengths
from jitterscope.simulate.fitting import Fit, fit_delays
from jitterscope.simulate.iid import simulate_iid
from jitterscope.simulate.job import Job, Simulation
from jitterscope.simulate.results import BySource, SourceEffect
from jitterscope.simulate.runs import RunNoise, load_noise, phase_delays, source_cuts
from jitterscope.simulate.spec import (
    DistributionNoise,
    FitNoise,
    NoiseSpec,
    PeriodicNoise,
    TraceNoise,
)
from jitterscope.simulate.timeline import Timeline, periodic_timeline
from jitterscope.simulate.trace import simulate_timelines

Progress = Callable[[float], None]

# Trace-mode cost model (measured on the 2-CPU benchmark machine, see BENCHMARKS.md):
# per node and phase, the work step plus a few vector operations per sync round,
# plus a full recomputation for the nodes a round finds in or reaching a detour
# (about the noise fraction plus detour rate x latency of them).
NS_PER_NODE_PHASE = 300.0
NS_PER_NODE_ROUND = 15.0
NS_PER_RECOMPUTE = 350.0
BYTES_PER_NODE = 160
TIME_LIMIT_S = budget.TIME_LIMIT_S
FIT_SUBSAMPLE = 2000  # goodness-of-fit statistics use at most this many delays (fitting.gof_cap)
FIT_S_PER_DRAW = 2e-6  # seconds per delay and bootstrap replicate, measured here (2 CPUs)


def _round_ns(hit: float) -> float:
    return NS_PER_NODE_ROUND + NS_PER_RECOMPUTE * min(1.0, hit)


def round_hit_fraction(timelines: list[Timeline], job: Job) -> float:
    """Share of nodes a sync round must recompute: noise fraction + detours per ns x latency."""
    if not timelines:
        return 0.0
    return max(tl.noise_fraction + len(tl.starts) / tl.period_ns * job.link_latency_s * 1e9 for tl in timelines)


def trace_cost(job: Job, simulations: int = 1, hit: float = 0.0) -> tuple[float, int]:
    """(estimated seconds, bytes) of a trace-driven simulation here."""
    secs = 0.0
    for n in job.nodes:
        m = 1 if job.cosched else n
        per = NS_PER_NODE_PHASE + job.rounds(n) * _round_ns(hit)
        secs += m * max(job.phases) * job.replications * per * 1e-9
    mem = (1 if job.cosched else max(job.nodes)) * BYTES_PER_NODE
    return secs * simulations, mem


def check_trace_size(job: Job, what: str, simulations: int = 1, hit: float = 0.0) -> None:
    """Refuse trace-driven sizes that do not fit in memory or in TIME_LIMIT_S here."""
    secs, mem = trace_cost(job, simulations, hit)
    avail = budget.mem_available()
    if budget.fits(mem, secs, TIME_LIMIT_S):
        return
    n_mem = avail // 2 // BYTES_PER_NODE
    n_time = int(max(job.nodes) * TIME_LIMIT_S / secs) if secs > 0 else n_mem
    raise JitterscopeError(
        f"trace-driven simulation of {count(max(job.nodes), 'node')} x {count(max(job.phases), 'phase')} x "
        f"{count(job.replications, 'replication')}{f' x {simulations} runs' if simulations > 1 else ''} needs "
        f"~{mem / 2**30:.3g} GiB ({avail / 2**30:.3g} GiB available) and ~{seconds(secs)} here; it fits up to "
        f"~{number(min(n_mem, n_time), 2)} nodes (memory: {number(n_mem, 2)}, {TIME_LIMIT_S / 60:.0f} min: "
        f"{number(n_time, 2)}); "
        f"for more nodes use the i.i.d. fit of this run: --noise fit:{what}"
    )


@dataclass
class _TraceSource:
    timelines: list[Timeline]
    model: dict[str, Any]
    noise: RunNoise | None = None


def _trace_source(spec: TraceNoise | PeriodicNoise, job: Job) -> _TraceSource:
    placement = "one shared random offset (co-scheduled)" if job.cosched else "an independent random offset"
    base: dict[str, Any] = {
        "phase_s": job.phase_s,
        "sync": job.sync,
        "link_latency_s": job.link_latency_s,
        "sync_rounds": "ceil(log2 N)" if job.sync != "none" else 0,
        "cosched": job.cosched,
        "replications": job.replications,
        "seed": job.seed,
        "spec": spec.text,
    }
    if isinstance(spec, PeriodicNoise):
        tl = periodic_timeline(spec.period_s * 1e9, spec.duration_s * 1e9)
        return _TraceSource(
            [tl],
            {
                "kind": "periodic",
                "description": (
                    f"every node is busy {spec.duration_s * 1e6:g} us every {spec.period_s * 1e3:g} ms, "
                    f"from {placement}; phases are work-conserving"
                ),
                "noise": {"period_s": spec.period_s, "duration_s": spec.duration_s},
                **base,
            },
        )
    noise = load_noise(str(spec.path))
    tls = noise.timelines()
    return _TraceSource(
        tls,
        {
            "kind": "trace",
            "description": (
                f"each node replays the measured noise of one of {noise.where} "
                f"of run {noise.run.meta.get('id', spec.path)} ({noise.period_ns / 1e9:g} s, wrapping "
                f"around) from {placement}; phases are work-conserving"
            ),
            "noise": {
                "run": str(spec.path),
                "cpus": noise.labels or noise.cpus,
                "duration_s": noise.period_ns / 1e9,
                "detours": len(noise.duration_ns),
                "noise_fraction": {tl.label: tl.noise_fraction for tl in tls},
            },
            **base,
        },
        noise,
    )


def fit_run(path: str, phase_s: float, replicates: int = 200, seed: int = 0, progress: Progress | None = None) -> Fit:
    """Per-phase delays of a run for phases of `phase_s`, fitted and ranked."""
    noise = load_noise(path)
    if phase_s * 1e9 > noise.period_ns / 20:
        raise JitterscopeError(
            f"--phase {phase_s * 1e3:g} ms leaves fewer than 20 phases per CPU in the "
            f"{noise.period_ns / 1e9:g} s run: use a shorter phase or a longer run"
        )
    n = len(noise.cpus or [0]) * noise.period_ns / (phase_s * 1e9)
    # the per-phase delays and a few working copies; bootstrap time per subsampled delay and replicate
    budget.check(
        f"fitting {count(round(n), 'phase')} of {seconds(phase_s)} with {count(replicates, 'replicate')}",
        n * 8 * 6,
        n * 2e-6 + min(n, FIT_SUBSAMPLE) * replicates * FIT_S_PER_DRAW,
        "use a longer --phase or fewer --replicates",
    )
    delays = phase_delays(noise.timelines(), phase_s * 1e9) / 1e9
    return fit_delays(
        delays,
        phase_s,
        replicates=replicates,
        seed=seed,
        source=str(path),
        cpus=noise.labels or noise.cpus,
        progress=progress,
    )


def run_detours(path: str) -> Detours:
    """A run's detours as the stream a synchronization round meets (overlaps merged per CPU)."""
    noise = load_noise(path)
    tls = noise.timelines()
    lengths = np.concatenate([tl.durations for tl in tls]) / 1e9
    return detours_from_lengths(lengths, sum(tl.period_ns for tl in tls) / 1e9)


def simulate(spec: NoiseSpec, job: Job, progress: Progress | None = None) -> Simulation:
    """Simulate `job` under `spec`, choosing the engine the spec calls for."""
    if isinstance(spec, DistributionNoise):
        return simulate_iid(spec.delay, job, spec.text, progress)
    if isinstance(spec, FitNoise):
        fit = fit_run(str(spec.path), job.phase_s, seed=job.seed)
        sim = simulate_iid(fit.best, job, spec.text, progress, run_detours(str(spec.path)))
        sim.model["fit"] = {
            "run": str(spec.path),
            "family": fit.best_name,
            "fits": fit.any_fits,
            "verdict": fit.verdict,
        }
        if not fit.any_fits:
            sim.notes.append(f"fit: {fit.verdict}")
        return sim
    check_trace_size(job, spec.text if isinstance(spec, TraceNoise) else "RUN")  # before reading tables
    src = _trace_source(spec, job)
    check_trace_size(
        job, spec.text if isinstance(spec, TraceNoise) else "RUN", hit=round_hit_fraction(src.timelines, job)
    )
    return simulate_timelines(src.timelines, job, src.model, progress)


def by_source(
    spec: NoiseSpec, job: Job, progress: Progress | None = None, note: Callable[[str], None] | None = None
) -> tuple[Simulation, BySource]:
    """The baseline simulation and, per attributed source, the slowdown without it.
    `note` gets the plan and its estimate before the work starts (one simulation per source).

    Every variant uses the same seed, so the same node offsets and CPU choices
    (common random numbers): differences between them are not replication noise."""
    if not isinstance(spec, TraceNoise):
        raise JitterscopeError(
            "--by-source needs a measured run as --noise (it removes each source from the run's noise timeline)"
        )
    noise = load_noise(str(spec.path))
    cuts = source_cuts(noise)
    top_n = max(job.nodes)
    scale_job = Job(
        (top_n,), job.phases, job.phase_s, job.sync, job.link_latency_s, job.cosched, job.replications, job.seed
    )
    hit = round_hit_fraction(noise.timelines(), job)
    check_trace_size(job, spec.text, hit=hit)
    check_trace_size(scale_job, spec.text, simulations=len(cuts), hit=hit)
    steps = 1 + len(cuts)
    if note is not None:
        secs = trace_cost(job, 1, hit)[0] + trace_cost(scale_job, len(cuts), hit)[0]
        note(
            f"by source: {len(cuts)} sources, one simulation of {count(top_n, 'node')} each, about {seconds(secs)} "
            f"here (time grows with the sources and the largest --nodes)"
        )

    def part(i: int) -> Progress | None:
        return (lambda f: progress((i + f) / steps)) if progress else None

    base = simulate(spec, job, part(0))
    total_noise = float(noise.duration_ns.sum())
    top_p = max(job.phases)
    ref = base.point(top_n, top_p)
    rows: list[SourceEffect] = []
    for i, (kind, name, cut, ns) in enumerate(cuts):
        tls = noise.timelines(np.maximum(noise.duration_ns - cut, 0.0))
        sim = simulate_timelines(tls, scale_job, {}, part(i + 1))
        r = sim.point(top_n, top_p)
        rows.append(
            {
                "kind": kind,
                "name": name,
                "noise_ns": ns,
                "share": ns / total_noise if total_noise else 0.0,
                "slowdown": r.slowdown,
                "reduction": ref.slowdown - r.slowdown,
                "runtime_s": r.runtime_s,
                "by_phases": {str(p.phases): p.slowdown for p in sim.results},
            }
        )
    for k, row in enumerate(sorted(rows, key=lambda r: -r["share"])):
        row["share_rank"] = k + 1
    rows.sort(key=lambda r: -r["reduction"])
    for k, row in enumerate(rows):
        row["rank"] = k + 1
    out: BySource = {
        "nodes": top_n,
        "phases": top_p,
        "baseline_slowdown": ref.slowdown,
        "baseline_runtime_s": ref.runtime_s,
        "sources": rows,
        "method": (
            "each source's time (attribution.parquet) subtracted from every detour it touched, "
            "then the same simulation with the same random offsets"
        ),
    }
    return base, out


__all__ = ["by_source", "check_trace_size", "fit_run", "simulate", "trace_cost"]
