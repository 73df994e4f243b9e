"""Order-statistic engine: i.i.d. per-phase delays, the maximum over N nodes drawn
directly (see `orderstats`), never N draws per phase.

Runtime of one replication with P phases on N nodes:

    T = P*W + sum_{k<=P} M_k + sum_{k<=P} sum_{j<=r} (L + H_kj)

M_k ~ max of N draws of the per-phase delay D; r = ceil(log2 N) synchronization
rounds of link latency L; H_kj ~ max of N draws of the noise one round sees.

Noise in a round.  D describes the noise a node meets in W of work.  A round is
L of time on every node, so it meets a thinned version of the same noise:
  * when D has an atom at 0 (bernoulli, fitted zero fractions), noise comes as
    the non-zero draws: a round is hit with probability (L/W) P(D>0) and a hit
    costs a draw of D given D>0;
  * otherwise D is read as a compound Poisson sum of k = max(1, E[D]^2/Var[D])
    events per phase (the moment match of a Poisson number of equal events), so
    a round is hit with probability 1 - exp(-k L/W) and a hit costs D/k.
Each round then waits for the worst node (max over N); for a dissemination
barrier that is an upper bound, tight when hits are rare.

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

from jitterscope.simulate import distributions as D
from jitterscope.simulate.job import Job, Result, Simulation
from jitterscope.simulate.orderstats import max_moments, sample_max

DRAW_BUDGET = 4_000_000       # draws per (N, term) before the CLT takes over
CHUNK = 1_000_000             # draws held in memory at once


def round_noise(delay: D.Delay, job: Job) -> tuple[D.Delay, str]:
    """The delay one synchronization round of L sees on one node, and how it was derived."""
    frac = min(1.0, job.link_latency_s / job.phase_s)
    p_pos = float(delay.sf(np.array(0.0)))
    if 0.0 in delay.atoms and p_pos < 1.0:
        text = (f"a round is hit with probability (L/W)*P(D>0) = {frac * p_pos:.3g}; "
                f"a hit costs a draw of D given D>0")
        return D.ZeroInflated(delay, frac), text
    m, v = delay.mean(), delay.var()
    k = max(1.0, m * m / v) if v > 0 and math.isfinite(v) else 1.0
    q = -math.expm1(-k * frac)
    text = (f"D read as {k:.3g} events per phase (E[D]^2/Var[D]); a round is hit with probability "
            f"1-exp(-k L/W) = {q:.3g} and a hit costs D/{k:.3g}")
    return D.ZeroInflated(D.Scaled(delay, 1.0 / k), q), text


def _sums(dist: D.Delay, n: float, counts: list[int], reps: int, rng: np.random.Generator,
          mean: float, var: float) -> np.ndarray:
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


def simulate_iid(delay: D.Delay, job: Job, description: str,
                 progress: Callable[[float], None] | None = None) -> Simulation:
    """Simulate the job under i.i.d. per-phase delays `delay` (seconds)."""
    phases = sorted(job.phases)
    hit, hit_text = round_noise(delay, job)
    results: list[Result] = []
    notes: list[str] = []
    for i, n in enumerate(sorted(job.nodes)):
        rng = np.random.default_rng([job.seed, n])
        r = job.rounds(n)
        m_mean, m_var = max_moments(delay, n)
        sums = _sums(delay, n, phases, job.replications, rng, m_mean, m_var)
        h_mean = h_var = 0.0
        if r > 0:
            h_mean, h_var = max_moments(hit, n)
            sums = sums + _sums(hit, n, [p * r for p in phases], job.replications, rng, h_mean, h_var)
        for j, p in enumerate(phases):
            ideal = job.ideal_s(n, p)
            expected = ideal + p * m_mean + p * r * h_mean
            results.append(Result(n, p, job.phase_s, ideal + sums[j], ideal,
                                  expected if math.isfinite(expected) else None))
        if progress:
            progress((i + 1) / len(job.nodes))
    if phases[-1] * job.replications > DRAW_BUDGET:
        notes.append(f"sums over more than {DRAW_BUDGET // job.replications} phases are drawn from the normal "
                     f"with the exact mean and variance (central limit theorem)")
    model = {
        "kind": "iid",
        "description": (f"i.i.d. per-phase delay {delay.describe()} on every node; the maximum over N nodes "
                        f"sampled from its order-statistic distribution F^N"),
        "noise": delay.to_json(),
        "phase_s": job.phase_s, "sync": job.sync, "link_latency_s": job.link_latency_s,
        "sync_rounds": "ceil(log2 N)" if job.sync != "none" else 0,
        "sync_noise": hit_text if job.sync != "none" else None,
        "cosched": job.cosched, "replications": job.replications, "seed": job.seed,
        "spec": description,
    }
    if job.cosched:
        notes.append("--cosched has no effect on i.i.d. delays (they carry no timing); use a run or periodic()")
    return Simulation(model, results, notes)
