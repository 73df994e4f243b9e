"""simulate says what its numbers mean (issue 17.7): the exact expectation beside the Monte Carlo
mean, Pareto I bounded below by its scale, a uniform family with its closed-form maximum."""

from __future__ import annotations

import numpy as np
import pytest

from jitterscope.errors import UsageError
from jitterscope.simulate import Job, parse_noise, simulate
from jitterscope.simulate import distributions as D
from jitterscope.simulate.orderstats import expected_max


@pytest.mark.parametrize("n", [1, 10, 1000, 10**9])
def test_uniform_expected_max_is_the_closed_form(n: int) -> None:
    assert expected_max(D.uniform(0.0, 2e-4), n) == pytest.approx(2e-4 * n / (n + 1), rel=1e-6)
    assert expected_max(D.uniform(1e-4, 3e-4), n) == pytest.approx(1e-4 + 2e-4 * n / (n + 1), rel=1e-6)


def test_json_results_carry_the_exact_expectation() -> None:
    spec = parse_noise("uniform(low=0us,high=200us)")
    sim = simulate(spec, Job((1, 1000), (100,), 1e-3, sync="none", replications=200))
    for r in sim.to_json()["results"]:
        n = r["nodes"]
        assert r["expected_s"] == pytest.approx(0.1 + 100 * 2e-4 * n / (n + 1), rel=1e-9)
        assert r["ci95_s"][0] <= r["expected_s"] <= r["ci95_s"][1] or abs(r["runtime_s"] / r["expected_s"] - 1) < 1e-3
        assert r["expected_slowdown"] == pytest.approx(r["expected_s"] / r["ideal_s"] - 1)


def test_a_barrier_costs_more_than_the_slowest_node() -> None:
    spec = parse_noise("uniform(low=0us,high=200us)")
    none = simulate(spec, Job((1000,), (100,), 1e-3, sync="none", replications=20)).point(1000, 100)
    bar = simulate(spec, Job((1000,), (100,), 1e-3, sync="barrier", replications=20)).point(1000, 100)
    rounds = bar.ideal_s - none.ideal_s
    assert bar.expected_s > none.expected_s + rounds


def test_pareto_is_type_one_every_delay_at_least_its_scale() -> None:
    d = parse_noise("pareto(alpha=2.5,scale=100us)").delay
    x = d.sample(np.random.default_rng(1), 100_000)
    assert x.min() >= 1e-4 and d.lower == pytest.approx(1e-4)
    assert d.mean() == pytest.approx(2.5 * 1e-4 / 1.5)


def test_uniform_needs_high_above_low() -> None:
    with pytest.raises(UsageError, match="high must exceed low"):
        parse_noise("uniform(low=200us,high=100us)")
