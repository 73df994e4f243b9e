"""The exact PTTS engine against brute-force enumeration and the thesis's worked example."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from jitterscope.ptts import exact
from jitterscope.ptts.model import load_model, model_from_dict
from tests.support import brute

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ptts"


def _pmf_dict(dist) -> dict[int, float]:
    return dict(zip(dist.times.tolist(), dist.probs.tolist()))


def _max_diff(a: dict[int, float], b: dict[int, float]) -> float:
    return max(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def _chain(components, resolution="1ms"):
    return model_from_dict({"resolution": resolution, "components": components})


def _random_chain(rng: np.random.Generator, n: int):
    comps = []
    for i in range(n):
        period = int(rng.integers(2, 11))
        offset = int(rng.integers(-12, 25))  # negative and beyond the period: taken modulo it
        k = int(rng.integers(1, 4))
        lo = int(rng.integers(0, 8))
        times = sorted(set((lo + rng.choice(np.arange(0, 3 * period), size=k, replace=False)).tolist()))
        w = rng.random(len(times)) + 0.05
        w = w / w.sum()
        comps.append(
            {
                "name": f"c{i}",
                "period": f"{period}ms",
                "offset": f"{offset}ms",
                "etp": {"pmf": {f"{t}ms": float(p) for t, p in zip(times, w)}},
            }
        )
    return _chain(comps)


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_brute_force_on_random_small_chains(seed):
    rng = np.random.default_rng(seed)
    model = _random_chain(rng, n=int(rng.integers(1, 5)))
    if model.trees() > 60 or math.prod(len(c.etp.support) for c in model.components) > 40:
        model = _random_chain(np.random.default_rng(seed + 1000), n=2)
    result = exact.analyse(model)
    want_pmf, want_loss = brute.brute_force(model)
    assert _max_diff(_pmf_dict(result.latency), want_pmf) <= 1e-12
    assert abs(result.loss - want_loss) <= 1e-12
    assert abs(result.latency.probs.sum() - 1.0) <= 1e-12
    assert np.all(result.latency.probs > 0)
    assert np.all(np.diff(result.latency.times) > 0)


def test_agrees_with_brute_force_when_frames_overtake_and_collide():
    # wide profiles against short periods: out-of-order production, many collisions at every stage
    model = _chain(
        [
            {"name": "a", "period": "5ms", "offset": "0ms", "etp": {"pmf": {"0ms": 0.2, "3ms": 0.3, "11ms": 0.5}}},
            {"name": "b", "period": "3ms", "offset": "1ms", "etp": {"pmf": {"1ms": 0.5, "7ms": 0.25, "8ms": 0.25}}},
            {"name": "c", "period": "4ms", "offset": "2ms", "etp": {"uniform": ["0ms", "5ms"]}},
            {"name": "d", "period": "6ms", "offset": "5ms", "etp": {"pmf": {"2ms": 0.5, "9ms": 0.5}}},
        ]
    )
    result = exact.analyse(model)
    want_pmf, want_loss = brute.brute_force(model)
    assert _max_diff(_pmf_dict(result.latency), want_pmf) <= 1e-12
    assert want_loss > 0.1
    assert abs(result.loss - want_loss) <= 1e-12
    assert abs(sum(result.loss_by_component.values()) - result.loss) <= 1e-15


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("dense", [True, False])
def test_chunked_and_sparse_paths_agree_with_brute_force(seed, dense, monkeypatch):
    # many small chunks and flushes (as on a million trees), and the sorted (np.unique) merging used
    # when phase classes x delays is too large for one array
    monkeypatch.setattr(exact, "CHUNK_STATES", 7)
    monkeypatch.setattr(exact._Accumulator, "FLUSH", 5)
    if not dense:
        monkeypatch.setattr(exact, "DENSE_MAX", 0)
    rng = np.random.default_rng(100 + seed)
    model = _random_chain(rng, n=3)
    if model.trees() > 60:
        model = _random_chain(np.random.default_rng(seed), n=2)
    result = exact.analyse(model)
    want_pmf, want_loss = brute.brute_force(model)
    assert _max_diff(_pmf_dict(result.latency), want_pmf) <= 1e-12
    assert abs(result.loss - want_loss) <= 1e-12


def test_production_precedes_consumption_at_equal_instants():
    # C0 produces exactly at 4 ms, when C1 triggers: C1 consumes it at 4, not at 8
    model = _chain(
        [
            {"name": "a", "period": "8ms", "offset": "0ms", "etp": {"pmf": {"4ms": 1.0}}},
            {"name": "b", "period": "4ms", "offset": "0ms", "etp": {"pmf": {"1ms": 1.0}}},
        ]
    )
    r = exact.analyse(model)
    assert r.latency.times.tolist() == [5]
    assert r.latency.probs.tolist() == [1.0]


def test_single_component_is_its_profile():
    model = _chain([{"name": "a", "period": "7ms", "etp": {"pmf": {"2ms": 0.25, "5ms": 0.75}}}])
    r = exact.analyse(model)
    assert (r.hyperperiod, r.trees) == (7, 1)
    assert _pmf_dict(r.latency) == {2: 0.25, 5: 0.75}
    assert r.loss == 0.0


# --- the thesis's worked example (chapter 5, figure 5.2) -----------------------------------------


@pytest.fixture(scope="module")
def thesis():
    return load_model(EXAMPLES / "thesis-example.yaml")


def test_worked_example_hyperperiod_and_trees(thesis):
    assert thesis.hyperperiod() == 40_600
    assert thesis.trees() == 203
    r = exact.analyse(thesis)
    assert (r.hyperperiod, r.trees) == (40_600, 203)
    # eq. 5.15: 203 * ceil(100/58) * ceil(30/56)
    assert exact.predicted_work(thesis) == 203 * 2 * 1


def test_worked_example_first_tree(thesis):
    root = exact.latency_tree(thesis, 0)
    edges = {child.time: p for p, child in root.children}
    # C1 triggers at 88, 146, 204 may consume the container of C0's triggering at 0 ...
    assert sorted(edges) == [88, 146, 204]
    # ... and the one at 146 does with probability sum_{t=89}^{146} f0(t) = 58/100
    assert edges[146] == pytest.approx(58 / 100, abs=1e-15)
    assert edges[88] == pytest.approx(39 / 100, abs=1e-15)
    assert edges[204] == pytest.approx(3 / 100, abs=1e-15)
    # thesis figure 5.4's inner edges: 146 -> 176 with 0.2, 204 -> 232 with 0.13, 204 -> 288 with 0.87
    inner = {(c.time, g.time): q * 1.0 for _, c in root.children for q, g in c.children}
    assert inner[(146, 176)] == pytest.approx(6 / 30)
    assert inner[(204, 232)] == pytest.approx(4 / 30)
    assert inner[(204, 288)] == pytest.approx(26 / 30)
    # thesis figure 5.5: flattened tree of the triggering at 0
    flat = exact.flatten(root)
    assert flat == pytest.approx({125: 0.104, 181: 0.402, 237: 0.468, 293: 0.026}, abs=1e-15)


def test_worked_example_tree_matches_engine(thesis):
    for k in (0, 1, 7, 202):
        flat = exact.flatten(exact.latency_tree(thesis, k))
        a = k * 200
        want = {t - a: p for t, p in flat.items()}
        got = _pmf_dict(exact.analyse(thesis, frames=[k], loss=False).latency)
        assert _max_diff(got, want) <= 1e-15


def test_worked_example_loss_of_the_pair_the_seed_examines(thesis):
    # thesis section 5.5: triggering 0 slow <0, 204, 288, 293> and triggering 200 fast <200, 262, 288, 293>;
    # (0.03 * 0.87) * (0.13 * 0.07) with the exact fractions 26/30 and 2/30
    pair = exact.analyse(thesis, frames=[0]).loss
    assert pair == pytest.approx(0.03 * (26 / 30) * 0.13 * (2 / 30), rel=1e-12)
    # divided by the 203 triggerings, as the thesis does: 1.11e-6 (the thesis prints 1.17e-6 from rounded edges)
    assert pair / 203 == pytest.approx(1.11e-6, rel=0.01)


def test_worked_example_loss_counts_every_pair(thesis):
    # the thesis stops at the pair (0, 200); 26 of the 203 pairs can collide, e.g. (1400, 1600) with
    # P = 11/100 * 18/30 * 5/100 * 10/30 = 1.1e-3
    per = [exact.analyse(thesis, frames=[k]).loss for k in range(203)]
    assert sum(p > 0 for p in per) == 26
    assert per[7] == pytest.approx(0.11 * 0.6 * 0.05 / 3, rel=1e-12)
    total = exact.analyse(thesis).loss
    assert total == pytest.approx(sum(per) / 203, rel=1e-12)


def test_worked_example_latency_agrees_with_brute_force(thesis):
    r = exact.analyse(thesis, loss=False)
    want, _ = brute.brute_force(thesis, loss=False)
    assert _max_diff(_pmf_dict(r.latency), want) <= 1e-12
    assert abs(r.latency.probs.sum() - 1) <= 1e-12


def test_table_5_2_tree_counts():
    for cfg, trees in (("a", 136), ("b", 13_861), ("c", 1_388_611)):
        assert load_model(EXAMPLES / f"config-{cfg}.yaml").trees() == trees


def test_loss_is_zero_when_periods_make_overwrites_impossible():
    # every stage is faster than the frame period: two frames can never be in one buffer
    model = _chain(
        [
            {"name": "cam", "period": "40ms", "etp": {"uniform": ["5ms", "14ms"]}},
            {"name": "cpu", "period": "10ms", "offset": "3ms", "etp": {"uniform": ["2ms", "6ms"]}},
            {"name": "gpu", "period": "8ms", "offset": "1ms", "etp": {"pmf": {"3ms": 0.5, "4ms": 0.5}}},
        ]
    )
    assert not exact.collisions_possible(exact.Chain.of(model))
    r = exact.analyse(model)
    assert r.loss == 0.0
    _, want = brute.brute_force(model)
    assert want == 0.0


def test_probabilities_sum_to_one_on_the_examples():
    for name in ("thesis-example", "thesis-example-f0prime", "xray-d", "xray-e", "xray-f", "config-b"):
        r = exact.analyse(load_model(EXAMPLES / f"{name}.yaml"))
        assert abs(r.latency.probs.sum() - 1.0) <= 1e-12, name


def test_estimate_counts_and_states():
    m = load_model(EXAMPLES / "config-b.yaml")
    e = exact.estimate(m)
    assert e.trees == 13_861
    assert e.predicted_work == exact.predicted_work(m)
    # the time is priced from the states it counts: the loss pass adds pair states, priced on top
    no_loss = exact.estimate(m, loss=False)
    assert no_loss.pair_states == 0 and e.states == no_loss.states
    assert e.seconds - no_loss.seconds == pytest.approx(e.pair_states * exact.SEC_PER_PAIR_STATE)


def test_accumulator_sums_each_group_as_one_bincount_of_its_batches(monkeypatch):
    # the vectorised engine scatters a batch in cache-sized pieces; each key's sum must be the
    # bincount of the group's batches bit for bit (so results do not move with the block size)
    monkeypatch.setattr(exact._Accumulator, "FLUSH", 1000)
    rng = np.random.default_rng(3)
    batches = [
        (rng.integers(0, 50, n), rng.random(n) * 10.0 ** rng.integers(-12, 1, n)) for n in (700, 400, 900, 1200, 50)
    ]
    acc = exact._Accumulator(50)
    for k, w in batches:
        for a in range(0, len(k), 37):  # pieces, as the engine's blocks
            acc.scatter(k[a : a + 37], w[a : a + 37])
        acc.count(len(k))
    keys, sums = acc.result()
    # groups end once 1000 keys have arrived: batches 0-1, then 2-3, then 4
    want = np.zeros(50)
    for group in ((0, 1), (2, 3), (4,)):
        want += np.bincount(
            np.concatenate([batches[g][0] for g in group]), np.concatenate([batches[g][1] for g in group]), minlength=50
        )
    assert keys.tolist() == np.flatnonzero(want).tolist()
    assert sums.tobytes() == want[keys].tobytes()


@pytest.mark.parametrize("block,flush,dense_max", [(5, 1 << 24, 1 << 25), (64, 3000, 1 << 25), (1 << 14, 1 << 24, 100)])
def test_results_do_not_depend_on_blocks_groups_or_the_sparse_path(monkeypatch, block, flush, dense_max):
    model = load_model(EXAMPLES / "config-b.yaml")
    want = exact.analyse(model)
    monkeypatch.setattr(exact, "BLOCK_ROWS", block)
    monkeypatch.setattr(exact, "DENSE_MAX", dense_max)
    got = exact.analyse(model)
    assert got.latency.times.tolist() == want.latency.times.tolist()
    assert got.latency.probs.tobytes() == want.latency.probs.tobytes()
    assert got.loss == want.loss and got.states == want.states
    # ending groups elsewhere changes the order of float additions, not the result beyond rounding
    monkeypatch.setattr(exact._Accumulator, "FLUSH", flush)
    regrouped = exact.analyse(model)
    assert np.allclose(regrouped.latency.probs, want.latency.probs, rtol=1e-12, atol=0)
    assert regrouped.loss == pytest.approx(want.loss, rel=1e-9)


def test_tabulated_transitions_are_the_computed_ones():
    ch = exact.Chain.of(load_model(EXAMPLES / "config-b.yaml"))
    t = np.arange(0, 5 * ch.d[1] * ch.d[0], ch.d[0], dtype=np.int64)
    w = (ch.o[1] - t) % ch.d[1]
    E, P, j0 = ch.from_wait(0, w, tabulate=True)
    E2, P2, j02 = ch.from_wait(0, w, tabulate=False)
    assert np.array_equal(E, E2) and P.tobytes() == P2.tobytes() and np.array_equal(j0, j02)
