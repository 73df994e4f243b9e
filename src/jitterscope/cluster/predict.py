"""Predict a `cluster bsp` job's runtime from its nodes' recorded noise, with the simulator.

Model (issue 4, Vicente & Matias): P phases of W work on N nodes, each delayed by the
noise that hits it; a phase ends when the last node finishes, then the nodes
synchronize.  The measured noise-free cost S of the synchronization becomes the
simulator's ceil(log2 N) rounds of link latency S / rounds (noise can hit those
too), so the ideal is P (W + S).  Every node does the longest node's work W (a
real job's calibrated loops differ by `measured.work_spread`, about 0.05%).

* Trace-driven: the simulator's engine (`simulate.trace.simulate_timelines`) with
  node i on its own recorded timeline from a random offset (placement "own"), one
  offset per machine the ranks ran on: what struck a machine's CPUs together (the
  kernel's fair server stalls every SCHED_FIFO rank of a busy machine at nearly the
  same moment, once a second) still does, and machines are independent.
  Work-conserving phases, mean of the replications and the half-width of their
  95% confidence interval.
* Replay: the same with every offset 0 (placement "recorded"): the recorded run
  itself pushed through the model, a check of the model rather than a prediction.
* Simulate: the same engine as `jitterscope simulate --noise RUN`, which gives
  every node a randomly chosen measured timeline (a cluster with one noisy node
  is then predicted as a mix of noisy and quiet nodes).
* Fitted: node i's per-phase delays (`simulate.runs.phase_delays`) are fitted by
  the simulator (`simulate.fitting.fit_delays`: a zero fraction plus the best of
  its families, or the measured delays with a generalized-Pareto tail when none
  fits; the measured delays themselves when that model has no finite mean or
  fewer than 20 phases met noise).  Nodes are independent but not identical, so
  a phase's expected delay is E[max_i D_i] = integral_0^inf (1 - prod_i F_i(x)) dx (the expectation of a
  non-negative variable as the integral of its survival function; David &
  Nagaraja, "Order Statistics", 3rd ed., 2003, section 3.1): the simulator's
  order statistics cover identical nodes only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitterscope.cluster.bsp_results import PredictionDetail
from jitterscope.simulate import distributions as D
from jitterscope.simulate.enough import MIN_POSITIVE
from jitterscope.simulate.fitting import fit_delays
from jitterscope.simulate.job import Job, Result
from jitterscope.simulate.runs import phase_delays
from jitterscope.simulate.timeline import Timeline
from jitterscope.simulate.trace import simulate_timelines

# Cuts of the E[max] integral: every node's survival levels down to 1e-15 (beyond
# the last one the maximum of N nodes exceeds x with probability < N 1e-15).
_LEVELS = np.array([0.5, 0.2, 0.1, 1e-2, 1e-3, 1e-4, 1e-6, 1e-9, 1e-12, 1e-15])
_MAX_PIECES = 5000
_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)


@dataclass
class Prediction:
    runtime_s: float
    ideal_s: float
    ci95_s: float | None  # half-width of the 95% confidence interval of the mean
    sd_s: float | None
    detail: PredictionDetail

    @property
    def slowdown(self) -> float:
        return self.runtime_s / self.ideal_s - 1.0


def bsp_job(
    nodes: int, phases: int, work_ns: float, sync: str, sync_ns: float, replications: int = 200, seed: int = 1
) -> Job:
    """The simulator's job for a measured BSP run: the sync's cost spread over its rounds."""
    job = Job(
        nodes=(nodes,),
        phases=(phases,),
        phase_s=work_ns / 1e9,
        sync=sync,
        link_latency_s=0.0,
        replications=replications,
        seed=seed,
    )
    rounds = job.rounds(nodes)
    return Job(
        nodes=(nodes,),
        phases=(phases,),
        phase_s=work_ns / 1e9,
        sync=sync,
        link_latency_s=sync_ns / 1e9 / max(1, rounds),
        replications=replications,
        seed=seed,
    )


def _from_result(res: Result, detail: PredictionDetail) -> Prediction:
    ci = res.ci95_s
    sd = float(np.std(res.runtimes_s, ddof=1)) if len(res.runtimes_s) > 1 else None
    return Prediction(res.runtime_s, res.ideal_s, None if ci is None else (ci[1] - ci[0]) / 2, sd, detail)


def trace_driven(
    timelines: list[Timeline], job: Job, placement: str = "own", hosts: list[str] | None = None
) -> Prediction:
    """The simulator's trace engine on the nodes' timelines ("own", "recorded" or "random"); with "own",
    the timelines of one of `hosts` (the machine each was recorded on) share their random offset."""
    if placement == "recorded":  # every replication would be the same
        job = Job(job.nodes, job.phases, job.phase_s, job.sync, job.link_latency_s, job.cosched, 1, job.seed)
    sim = simulate_timelines(timelines, job, {}, placement=placement, hosts=hosts if placement == "own" else None)
    detail: PredictionDetail = {"replications": job.replications, "seed": job.seed, "placement": placement}
    if placement == "own":
        detail["offsets"] = "one per machine" if hosts is not None else "one per node"
    if placement == "random":
        detail["assignment"] = "random measured timeline per node (jitterscope simulate)"
    return _from_result(sim.results[0], detail)


def node_delay(delays_ns: np.ndarray, phase_ns: float) -> tuple[D.Delay | None, str]:
    """One node's per-phase delay distribution (seconds) and how it was chosen;
    None when no phase met any noise."""
    d = np.asarray(delays_ns, dtype=float) / 1e9
    positive = int(np.count_nonzero(d > 0))
    if positive == 0:
        return None, "no phase met any noise"
    measured = D.SplicedTail(d, float(d.max()), 0.0, 1.0)  # the simulator's own fallback when nothing fits
    if positive < MIN_POSITIVE:
        return measured, f"only {positive} phases met noise, too few to fit: the measured delays themselves"
    fit = fit_delays(d, phase_ns / 1e9)
    if not np.isfinite(fit.best.mean()):
        # A generalized-Pareto tail with xi >= 1 (from a few dozen exceedances of a
        # bimodal sample, typically) has no mean: E[max] would be infinite.
        return measured, f"{fit.verdict}; but {fit.best.describe()} has no finite mean: the measured delays themselves"
    return fit.best, fit.verdict


def expected_max(delays: list[D.Delay | None]) -> float:
    """E[max_i D_i] (seconds) for independent delays, their mass below 0 counted at 0.

    Gauss-Legendre quadrature on pieces cut at every node's survival levels, atoms
    and measured delays (an empirical distribution is a step function: exact)."""
    dists = [d for d in delays if d is not None]
    if not dists:
        return 0.0
    cuts: set[float] = {0.0}
    for d in dists:
        with np.errstate(all="ignore"):
            cuts.update(float(x) for x in np.atleast_1d(d.isf(_LEVELS)) if np.isfinite(x) and x > 0)
        cuts.update(float(a) for a in d.atoms if a > 0)
        cuts.update(float(x) for x in getattr(d, "data", ()) if x > 0)
    edges = np.array(sorted(cuts))
    if len(edges) > _MAX_PIECES:
        edges = np.unique(np.quantile(edges, np.linspace(0.0, 1.0, _MAX_PIECES)))
    if len(edges) < 2:
        return 0.0
    a, b = edges[:-1], edges[1:]
    half = (b - a)[:, None] / 2
    x = ((a + b)[:, None] / 2 + half * _GL_X[None, :]).ravel()
    w = (half * _GL_W[None, :]).ravel()
    log_f = np.sum([d.log_cdf_safe(x) for d in dists], axis=0)
    return float(np.sum(w * -np.expm1(log_f)))


def fitted(timelines: list[Timeline], job: Job) -> Prediction:
    """Per-node fits of the per-phase delays; a phase costs W + E[max_i D_i] + the sync."""
    n, phases = job.nodes[0], job.phases[0]
    work_ns = job.phase_s * 1e9
    models = [node_delay(phase_delays([tl], work_ns), work_ns) for tl in timelines]
    delay_s = expected_max([m for m, _ in models])
    ideal = job.ideal_s(n, phases)
    return Prediction(
        ideal + phases * delay_s,
        ideal,
        None,
        None,
        {
            "expected_max_delay_ns": round(delay_s * 1e9, 1),
            "fits": [
                {"model": m.describe() if m else "no delay", "noise": m.to_json() if m else None, "verdict": v}
                for m, v in models
            ],
        },
    )
