"""compare: the statistics, and the diff of synthetic runs with known changes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from jitterscope.compare import from_run, pool, source_key
from jitterscope.compare import stats as S
from jitterscope.compare.runs import compare_runs
from jitterscope.rundir import load_run
from tests.fixtures_runs import Injector, build_run


def test_rate_test_is_the_conditional_binomial_and_its_interval_covers_the_ratio():
    r = S.poisson_rate_test(10, 2.0, 30, 1.0)  # rates 5/s and 30/s
    assert r.ratio == pytest.approx(6.0)
    assert r.p == pytest.approx(stats.binomtest(30, 40, 1 / 3).pvalue)
    assert r.ci[0] < 6.0 < r.ci[1] and r.p < 1e-6


def test_rate_test_holds_its_level_under_equal_rates():
    rng = np.random.default_rng(1)
    ps = [S.poisson_rate_test(rng.poisson(20), 1.0, rng.poisson(40), 2.0).p for _ in range(800)]
    assert np.mean(np.array(ps) < 0.05) <= 0.06  # exact test: at most the nominal level


def test_duration_test_effect_size_sign_and_scale():
    rng = np.random.default_rng(2)
    base = rng.lognormal(np.log(3000), 0.3, 400)
    longer = S.duration_test(base, base * 1.5)
    assert longer.cliffs_delta > 0.5 and longer.p < 1e-10 and longer.median_ratio == pytest.approx(1.5)
    same = S.duration_test(base, rng.lognormal(np.log(3000), 0.3, 400))
    assert abs(same.cliffs_delta) < 0.15 and same.p > 0.001
    assert S.duration_test(base[:3], base) is None


def test_bh_matches_the_step_up_definition():
    p = [0.001, 0.04, 0.03, 0.5]
    # sorted 0.001, 0.03, 0.04, 0.5 -> m*p/rank = 0.004, 0.06, 0.0533, 0.5 -> monotone from the top
    assert S.bh_adjust(p) == pytest.approx([0.004, 0.0533333, 0.0533333, 0.5])
    assert S.bh_adjust([0.02, float("nan")]) == pytest.approx([0.04, 1.0])  # an untestable p counts as 1


def test_bh_agrees_with_statsmodels_on_ties_and_many_tests():
    from statsmodels.stats import multitest  # scikit-posthocs, a dependency, brings it

    rng = np.random.default_rng(5)
    p = np.concatenate([rng.uniform(size=300), rng.uniform(0, 1e-4, 20), [0.5] * 10, [1.0, 0.0]])
    assert S.bh_adjust(list(p)) == pytest.approx(list(multitest.multipletests(p, method="fdr_bh")[1]), abs=1e-12)


def test_kworker_ids_match_across_boots():
    assert source_key("thread", "kworker/1:2") == source_key("thread", "kworker/1:0") == ("thread", "kworker/1:*")
    assert source_key("thread", "kworker/u8:3") == ("thread", "kworker/u8:*")
    assert source_key("thread", "kworker/1:1H") == ("thread", "kworker/1:*H")
    assert source_key("irq", "kworker/1:2") == ("irq", "kworker/1:2")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    return {
        "a": build_run(d / "a", cpus=[1, 2], seed=11),
        "b": build_run(d / "b", cpus=[1, 2], seed=12),
        "c": build_run(d / "c", cpus=[1, 2], seed=13),
        "inj": build_run(
            d / "inj", cpus=[1, 2], seed=14, injector=Injector(cpu=2, period_ns=100_000_000, busy_ns=300_000)
        ),
        "slowtick": build_run(d / "slowtick", cpus=[1], seed=15, tick_scale=1.8),
        "notrace": build_run(d / "notrace", cpus=[2, 3], seed=16, tracing=False),
    }


def test_injected_daemon_is_a_new_source_and_a_regression(runs):
    r = compare_runs(runs["a"], runs["inj"])
    assert [(x["kind"], x["name"]) for x in r["new"]] == [("thread", "jitterscope-inj")]
    inj = r["new"][0]
    assert inj["new"]["count"] == pytest.approx(30, abs=1) and inj["rate"]["q"] < 1e-6
    assert inj["regression"] and r["regression"]
    assert r["total"]["2"]["regression"] and not r["total"]["1"]["regression"]
    # 300 us every 100 ms on one of two CPUs: 1500 ppm averaged over both.
    assert inj["delta_ppm"] == pytest.approx(1500, rel=0.05)


@pytest.mark.parametrize("pair", [("a", "b"), ("b", "c"), ("a", "c")])
def test_quiet_runs_of_the_same_machine_do_not_regress(runs, pair):
    r = compare_runs(runs[pair[0]], runs[pair[1]])
    assert not r["regression"], r["regressions"]
    assert r["new"] == [] and r["gone"] == []


def test_longer_tick_is_a_duration_change_not_a_rate_change(runs):
    r = compare_runs(runs["a"], runs["slowtick"])
    assert r["compared_cpus"] == [1] and r["not_compared"] == ["CPU 2: only in BASE"]
    tick = next(x for x in r["changed"] if x["name"] == "local_timer")
    assert tick["direction"] == "worse" and tick["regression"]
    assert tick["duration"]["q"] < 1e-10 and tick["duration"]["cliffs_delta"] > 0.5
    assert tick["rate"]["q"] > 0.05
    assert {"kind", "name"} <= set(tick) and {"kind", "name"} <= set(r["new"][0] if r["new"] else tick)


def test_without_attribution_only_totals_are_compared(runs):
    r = compare_runs(runs["a"], runs["notrace"])
    assert r["compared_cpus"] == [2]
    assert "CPU 1: only in BASE" in r["not_compared"] and "CPU 3: only in NEW" in r["not_compared"]
    assert any("only BASE was traced" in x for x in r["not_compared"])
    assert set(r["total"]) == {"2"}
    assert not r["total"]["2"]["tested"] and not r["regression"] and not r["new"] and not r["gone"]


def test_pooling_adds_exposure_and_occurrences(runs):
    a, b = (from_run(load_run(runs[k]), [1, 2]) for k in ("a", "b"))
    p = pool([a, b])
    key = ("irq", "local_timer")
    assert p.exposure_ns == a.exposure_ns + b.exposure_ns
    assert len(p.occurrences[key]) == len(a.occurrences[key]) + len(b.occurrences[key])
    assert p.noise_ns[1] == a.noise_ns[1] + b.noise_ns[1]
    assert p.ppm(1) == pytest.approx((a.noise_ns[1] + b.noise_ns[1]) / (2 * a.cpu_exposure_ns[1]) * 1e6)


def test_a_burst_is_not_read_as_many_independent_events():
    base = np.zeros(30)
    burst = np.zeros(30)
    burst[7] = 20  # 20 occurrences, all in one 100 ms block
    spread = np.zeros(30)
    spread[::3] = 2  # 20 occurrences spread over the run
    b, phi_b = S.rate_test(0, 3.0, 20, 3.0, base, burst)
    s, _ = S.rate_test(0, 3.0, 20, 3.0, base, spread)
    assert phi_b > 5 and b.p > 0.01
    assert s.p < 1e-4 and s.p < b.p
