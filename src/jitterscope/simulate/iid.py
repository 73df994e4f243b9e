"""Order-statistic engine: i.i.d. per-phase delays, the maximum over N nodes drawn
directly (see `orderstats`), never N draws per phase.

Runtime of one replication with P phases on N nodes:

    without synchronization cost:  T = P W + sum_(k<=P) M_k,   M_k ~ max of N draws of D
    with a barrier or allreduce:   T = P (W + R L) + sum_(k<=P) V_k

R = ceil(log2 N) rounds of link latency L.  V_k is one node's phase time beyond
W + R L: its compute delay and the barrier's, drawn from the exact law of the
dissemination barrier's dependency tree under i.i.d. noise (`barrier`), in which
a round on a node meets at most one detour (in progress when the message
arrives, or starting during the round; `detours`).  The compute maximum inside
V is the exact order statistic; only the barrier's increment is on a lattice.

Sums over many phases.  When P x R draws exceed a budget the per-replication sum
is drawn from the normal distribution with the exact mean and variance P E[M],
P Var[M] (central limit theorem; both moments from `orderstats.max_moments`), in
independent increments between the requested phase counts.  Heavy tails with
infinite variance are always drawn one by one.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from jitterscope import budget
from jitterscope.simulate import distributions as D
from jitterscope.simulate.barrier import LatticeDelay, phase_law
from jitterscope.simulate.detours import Detours, detours_from_delay
from jitterscope.simulate.job import Job, Result, Simulation
from jitterscope.simulate.orderstats import max_moments, sample_max

DRAW_BUDGET = 4_000_000  # draws per (N, term) before the CLT takes over
CHUNK = 1_000_000  # draws held in memory at once
S_PER_DRAW = 5e-8  # seconds per drawn maximum, vectorised, on this 2-CPU machine


def _sums(
    dist: D.Delay, n: float, counts: list[int], reps: int, rng: np.random.Generator, mean: float, var: float
) -> np.ndarray:
    """Per replication, the sum of counts[i] draws of max-of-n (cumulative over sorted counts).
    Returns shape (len(counts), reps)."""
    out = np.zeros((len(counts), reps))
    if not counts or counts[-1] == 0:
        return out
    exact = counts[-1] * reps <= DRAW_BUDGET or not math.isfinite(var)
    running = np.zeros(reps)
    done = 0
    for i, c in enumerate(counts):
        todo = c - done
        if todo > 0:
            if exact:
                step = max(1, CHUNK // reps)
                left = todo
                while left > 0:
                    k = min(step, left)
                    running += sample_max(dist, n, rng, (k, reps)).sum(axis=0)
                    left -= k
            else:
                running += rng.normal(todo * mean, math.sqrt(todo * var), reps)
            done = c
        out[i] = running
    return out


def check_iid_size(delay: D.Delay, job: Job) -> None:
    """Refuse before drawing: R runtimes per (nodes, phases) cell are held, and draws are
    capped by DRAW_BUDGET per cell unless the tail forbids the CLT (then P x R draws)."""
    cells = len(job.nodes) * len(job.phases) * job.replications
    heavy = not math.isfinite(delay.var()) if hasattr(delay, "var") else True
    per_cell = max(job.phases) * job.replications
    draws = len(job.nodes) * (per_cell if heavy else min(per_cell, DRAW_BUDGET))
    budget.check(
        f"simulating {job.replications:,} replications of {len(job.nodes)} node counts x "
        f"{len(job.phases)} phase counts",
        cells * 8 * 3,
        draws * S_PER_DRAW + cells * 5e-8,
        "use fewer --replications or fewer --nodes/--phases values",
    )


def simulate_iid(
    delay: D.Delay,
    job: Job,
    description: str,
    progress: Callable[[float], None] | None = None,
    detours: Detours | None = None,
) -> Simulation:
    """Simulate the job under i.i.d. per-phase delays `delay` (seconds); `detours`
    (from a run) say what a synchronization round meets, else `delay` is read as detours."""
    phases = sorted(job.phases)
    check_iid_size(delay, job)
    if detours is None:
        detours = detours_from_delay(delay, job.phase_s)
    results: list[Result] = []
    notes: list[str] = []
    for i, n in enumerate(sorted(job.nodes)):
        rng = np.random.default_rng([job.seed, n])
        r = job.rounds(n)
        if r > 0:  # one node's phase (compute + barrier), from the barrier's tree
            per: D.Delay = LatticeDelay(phase_law(delay, detours, n, r, job.link_latency_s))
            m_mean, m_var = per.mean(), per.var()
            sums = _sums(per, 1, phases, job.replications, rng, m_mean, m_var)
        else:
            m_mean, m_var = max_moments(delay, n)
            sums = _sums(delay, n, phases, job.replications, rng, m_mean, m_var)
        for j, p in enumerate(phases):
            ideal = job.ideal_s(n, p)
            expected = ideal + p * m_mean
            results.append(
                Result(n, p, job.phase_s, ideal + sums[j], ideal, expected if math.isfinite(expected) else None)
            )
        if progress:
            progress((i + 1) / len(job.nodes))
    if phases[-1] * job.replications > DRAW_BUDGET:
        notes.append(
            f"sums over more than {DRAW_BUDGET // job.replications} phases are drawn from the normal "
            f"with the exact mean and variance (central limit theorem)"
        )
    model = {
        "kind": "iid",
        "description": (
            f"i.i.d. per-phase delay {delay.describe()} on every node; the maximum over N nodes "
            f"sampled from its order-statistic distribution F^N"
        ),
        "noise": delay.to_json(),
        "phase_s": job.phase_s,
        "sync": job.sync,
        "link_latency_s": job.link_latency_s,
        "sync_rounds": "ceil(log2 N)" if job.sync != "none" else 0,
        "sync_noise": (
            f"the dissemination barrier's dependency tree with i.i.d. noise: a round on a node "
            f"waits for a detour in progress when the message arrives (if it began while the "
            f"node waited; its residual length) or one starting in the round (its full length); "
            f"detours: {detours.description}"
        )
        if job.sync != "none"
        else None,
        "cosched": job.cosched,
        "replications": job.replications,
        "seed": job.seed,
        "spec": description,
    }
    if not math.isfinite(delay.var()):
        notes.append(
            "the delay has infinite variance (a tail index of 1/2 or more): the Monte Carlo mean and its "
            "interval are unreliable however many replications; read the exact mean (expected_s)"
        )
    if job.cosched:
        notes.append("--cosched has no effect on i.i.d. delays (they carry no timing); use a run or periodic()")
    return Simulation(model, results, notes)
