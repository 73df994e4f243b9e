"""The barrier's dependency-tree law against brute-force dissemination barriers."""

from __future__ import annotations

import numpy as np
import pytest

from jitterscope.simulate import distributions as D
from jitterscope.simulate.barrier import cone_bound, phase_law
from jitterscope.simulate.detours import Detours, detours_from_lengths
from jitterscope.simulate.orderstats import max_moments


def _brute(delay: D.Delay, det: Detours, n: int, latency: float, reps: int, seed: int) -> np.ndarray:
    """Node 0's phase time beyond W + R L in a real dissemination barrier of n nodes
    (node i waits for i - 2^r), noise drawn i.i.d. per node and round as `detours` says."""
    rng = np.random.default_rng(seed)
    rounds = int(np.ceil(np.log2(n)))
    d = det.lengths
    assert d is not None
    shape = (reps, n)  # every repetition at once, a row each
    t = np.asarray(delay.sample(rng, reps * n), dtype=float).reshape(shape)
    for r in range(rounds):
        partner = np.roll(t, 1 << r, axis=1)
        length = rng.choice(d, shape, p=d / d.sum())  # length-biased: the covering detour
        age = rng.random(shape) * length
        covered = (rng.random(shape) < det.noise_fraction) & (age < partner - t)
        t = np.maximum(t, partner + np.where(covered, length - age, 0.0))
        starts = rng.random(shape) < det.start_probability(latency)
        t = t + np.where(starts, rng.choice(d, shape), 0.0)
    return t[:, 0]


@pytest.mark.parametrize("n", [2, 8, 32])
def test_tree_law_matches_brute_force_barrier(n):
    delay = D.gamma(2.0, 0.5e-3)
    det = detours_from_lengths(np.array([20e-6, 50e-6, 400e-6, 2e-3, 5e-3]), 0.05)  # 10% noise
    latency = 20e-6
    law = phase_law(delay, det, n, int(np.ceil(np.log2(n))), latency)
    mean, var = law.moments()
    x = _brute(delay, det, n, latency, 20_000, seed=n)
    se = x.std(ddof=1) / np.sqrt(len(x))
    assert abs(x.mean() - mean) < 4 * se + law.h  # lattice rounding is at most h
    assert np.sqrt(var) == pytest.approx(x.std(), rel=0.05)


def test_tree_law_is_below_the_cone_sum_bound_and_far_below_max_over_all():
    delay = D.gamma(2.0, 0.5e-3)
    det = detours_from_lengths(np.array([20e-6, 50e-6, 400e-6, 2e-3, 5e-3]), 0.05)
    n, rounds = 1024, 10
    mean = phase_law(delay, det, n, rounds, 20e-6).moments()[0]
    # a round's noise as if every node were idle and every detour counted: residual of
    # the covering detour with probability f (an upper bound for the gap condition)
    d = det.lengths
    resid = D.ScipyDelay("residual", {}, _ResidualLaw(d))
    hit = D.ZeroInflated(resid, det.noise_fraction)
    bound = cone_bound(delay, hit, n, rounds)
    charged_every_round_max_over_all = max_moments(delay, n)[0] + rounds * max_moments(hit, n)[0]
    assert mean <= bound < charged_every_round_max_over_all


class _ResidualLaw:
    """Residual of the detour covering a random instant: P(res > x) = E[(d - x)^+] / E[d]."""

    def __init__(self, d: np.ndarray) -> None:
        self.d = np.sort(d)

    def _s(self, x):
        x = np.asarray(x, dtype=float)
        return np.maximum(np.subtract.outer(-x, -self.d), 0).mean(-1) / self.d.mean()

    def sf(self, x):
        return self._s(x)

    def logcdf(self, x):
        return np.log1p(-np.minimum(self._s(x), 1.0))

    def mean(self):
        return float((self.d**2).mean() / (2 * self.d.mean()))

    def var(self):
        return float((self.d**3).mean() / (3 * self.d.mean()) - self.mean() ** 2)

    def support(self):
        return (0.0, float(self.d[-1]))

    def isf(self, s):
        grid = np.linspace(0, self.d[-1], 20001)
        sg = self._s(grid)
        return np.interp(-np.asarray(s, dtype=float), -sg, grid)

    def ppf(self, u):
        return self.isf(1 - np.asarray(u, dtype=float))


def test_iid_fit_with_barrier_tracks_the_trace_driven_barrier(tmp_path):
    """fit:RUN with a barrier against the trace engine's real dissemination barrier on the
    same run (64 and 1024 nodes, 100 phases of 1 ms).

    Tolerance: the i.i.d. model starts every phase on all nodes together, whereas in
    the trace engine (and a real job) a node starts its next phase when its own
    barrier ends, so the spread of barrier end times carries into the next phase's
    maximum.  That carry-over is not modelled and makes the i.i.d. prediction low:
    by about 20% on this run and 25-32% on a measured 32%-noise VM run from 64 to 10^5
    nodes (docs/commands/simulate.md).  The test pins that: never above the trace
    (beyond its CI) and at most 30% below.  The previous model (every round charged
    the maximum over all N nodes of a phase's delay) fails it at scale."""
    from jitterscope.simulate import Job, parse_noise, simulate
    from tests.support.noise_runs import periodic_source, write_noise_run

    r = 10e9
    run = write_noise_run(
        tmp_path / "noisy",
        [
            periodic_source("irq", "tick", 1, 1e6, 5e3, r, phase_ns=1234, jitter_ns=200, seed=1),
            periodic_source("thread", "worker", 1, 5e6, 400e3, r, phase_ns=100, jitter_ns=4e6, seed=2),
            periodic_source("thread", "daemon", 1, 97e6, 3e6, r, phase_ns=5e6, jitter_ns=90e6, seed=3),
        ],
        10.0,
    )
    trace = simulate(parse_noise(str(run)), Job((64, 1024), (100,), 1e-3, replications=10))
    iid = simulate(parse_noise(f"fit:{run}"), Job((64, 1024), (100,), 1e-3, replications=50))
    for n in (64, 1024):
        t, i = trace.point(n, 100), iid.point(n, 100)
        assert 0.7 * t.ci95_s[0] <= i.runtime_s <= t.ci95_s[1]


def test_a_heavy_fitted_tail_does_not_coarsen_the_barrier_lattice():
    """fit:RUN chose an empirical body with a GPD tail of index 0.9; the run's detours are at most
    60 us.  The barrier adds at most one of them per round, yet a lattice spanning the tail's
    1 - 1e-12 quantile (10^7 s) rounded each increment to a step of hours: 7.8 h for a 131 ms job."""
    from jitterscope.simulate.detours import detours_from_lengths
    from jitterscope.simulate.distributions import SplicedTail
    from jitterscope.simulate.orderstats import expected_max

    rng = np.random.default_rng(2)
    data = np.concatenate([np.zeros(7000), rng.lognormal(np.log(4.5e-6), 0.4, 3000)])
    delay = SplicedTail(data, 6.9e-6, 0.9, 1.34e-6)
    det = detours_from_lengths(rng.uniform(1e-6, 60e-6, 900), 3.0)
    n, rounds, latency = 1000, 10, 2e-6
    with_barrier = phase_law(delay, det, n, rounds, latency).moments()[0]
    alone = expected_max(delay, n)
    assert alone <= with_barrier <= alone + rounds * (latency + 60e-6)
