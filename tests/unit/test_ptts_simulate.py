"""Monte Carlo convergence to the exact result, and period adaptation (thesis section 5.7)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from jitterscope.ptts import approx, exact, simulate, stats
from jitterscope.ptts.model import load_model, model_from_dict

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ptts"

OVERTAKING = {
    "resolution": "1ms",
    "components": [
        {"name": "a", "period": "5ms", "offset": "0ms", "etp": {"pmf": {"0ms": 0.2, "3ms": 0.3, "11ms": 0.5}}},
        {"name": "b", "period": "3ms", "offset": "1ms", "etp": {"pmf": {"1ms": 0.5, "7ms": 0.25, "8ms": 0.25}}},
        {"name": "c", "period": "4ms", "offset": "2ms", "etp": {"uniform": ["0ms", "5ms"]}},
    ],
}


def test_monte_carlo_converges_to_the_exact_distribution():
    m = load_model(EXAMPLES / "thesis-example.yaml")
    ex = exact.analyse(m)
    previous = None
    for n in (1_000, 10_000, 60_000):
        sim = simulate.simulate(m, n, seed=7)
        d = stats.distances(sim.latency, ex.latency)
        assert d["kolmogorov"] <= stats.dkw_band(n, alpha=0.001)
        if previous is not None:
            assert d["total_variation"] < previous
        previous = d["total_variation"]
    assert abs(sim.latency.probs.sum() - 1) < 1e-12


def test_monte_carlo_loss_converges_and_counts_overtaking():
    m = model_from_dict(OVERTAKING)
    ex = exact.analyse(m)
    n = 40_000
    sim = simulate.simulate(m, n, seed=11)
    se = math.sqrt(ex.loss * (1 - ex.loss) / n)
    assert abs(sim.loss - ex.loss) <= 5 * se
    assert stats.distances(sim.latency, ex.latency)["kolmogorov"] <= stats.dkw_band(n, alpha=0.001)
    # frames overtake here, so some overwrites are not between consecutive frames
    assert sim.loss_any != sim.loss


def test_without_overtaking_every_overwrite_is_between_consecutive_frames():
    m = load_model(EXAMPLES / "thesis-example.yaml")
    sim = simulate.simulate(m, 30_000, seed=5)
    assert sim.loss == sim.loss_any


def test_simulation_is_reproducible_with_a_seed():
    m = load_model(EXAMPLES / "xray-e.yaml")
    a = simulate.simulate(m, 500, seed=3)
    b = simulate.simulate(m, 500, seed=3)
    assert a.latency.times.tolist() == b.latency.times.tolist()
    assert a.latency.probs.tolist() == b.latency.probs.tolist()


def test_round_preserving_keeps_order_and_equality():
    # 16.66 and 16.67 cannot both be 16.7: the least total change keeps them apart as 16.6 and 16.7
    assert approx._round_preserving([6666, 1666, 1667], 10) == [6670, 1660, 1670]
    assert approx._round_preserving([1666, 1666, 1667], 100) == [1600, 1600, 1700]
    assert approx._round_preserving([3, 5], 100) == [100, 200]


def test_adaptation_shortens_the_hyperperiod_within_budget():
    m = load_model(EXAMPLES / "config-c.yaml")
    ad = approx.adapt_periods(m, budget_s=0.2)
    assert ad.changed and ad.estimate.seconds <= 0.2
    assert ad.estimate.trees < 1_388_611
    assert all(abs(n - o) <= ad.grid for n, o in zip(ad.periods, ad.original))
    # 16.66 and 16.67 keep drifting against each other
    assert ad.periods[1] != ad.periods[2]
    # and no clock is locked to its neighbour (66.64 = 4 x 16.66 would leave one relative phase)
    assert max(approx.phase_steps(ad.periods)) <= 2 * ad.grid
    locked = approx.distortion(ad.original, [6664, 1666, 1673])
    assert locked[0] == 1666 and locked > approx.distortion(ad.original, ad.periods)
    unchanged = approx.adapt_periods(m, budget_s=1e6)
    assert not unchanged.changed and unchanged.grid == 1


def test_adapted_result_is_close_to_the_exact_original():
    m = load_model(EXAMPLES / "config-b.yaml")
    ad = approx.adapt_periods(m, budget_s=0.002)
    assert ad.changed
    a = exact.analyse(m.with_periods(ad.periods))
    ex = exact.analyse(m)
    d = stats.distances(a.latency, ex.latency)
    assert d["kolmogorov"] < 0.1
    assert abs(stats.summary(a.latency)["mean"] - stats.summary(ex.latency)["mean"]) < 20  # ticks of 0.1 ms


def test_summary_percentiles_and_miss():
    import numpy as np

    from jitterscope.ptts.exact import Distribution

    d = Distribution(np.array([10, 20, 30, 40]), np.array([0.25, 0.25, 0.4, 0.1]))
    s = stats.summary(d)
    assert (s["min"], s["max"], s["p50"], s["p90"], s["p99"]) == (10, 40, 20, 30, 40)
    assert s["mean"] == pytest.approx(2.5 + 5 + 12 + 4)
    assert stats.miss_probability(d, 30) == pytest.approx(0.1)
    assert stats.miss_probability(d, 29) == pytest.approx(0.5)
