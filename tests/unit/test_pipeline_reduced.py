"""The reduced heuristic's search for the static order with the least peak of active data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterscope.pipeline import sos as S
from jitterscope.pipeline.compiler import compile_graph
from jitterscope.pipeline.graph import load_graph

ROOT = Path(__file__).resolve().parents[2]


def random_structure(seed: int, n: int) -> S.Footprints:
    """n actors; each reads 0-3 buffers of earlier actors and writes 1-2 buffers of random sizes."""
    rng = np.random.default_rng(seed)
    outs: list[list[int]] = []
    readers: list[int] = []
    size: list[int] = []
    preds = [0] * n
    for i in range(n):
        if i and outs:
            made = [b for bufs in outs for b in bufs]
            for b in rng.choice(made, size=min(len(made), int(rng.integers(1, 4))), replace=False):
                readers[int(b)] |= 1 << i
                producer = next(j for j, bufs in enumerate(outs) if int(b) in bufs)
                preds[i] |= 1 << producer
        mine = []
        for _ in range(int(rng.integers(1, 3))):
            mine.append(len(size))
            size.append(int(rng.integers(1, 5)))
            readers.append(0)
        outs.append(mine)
    local = []
    for i in range(n):
        local.append(sum(size[b] for b in range(len(size)) if readers[b] >> i & 1) + sum(size[b] for b in outs[i]))
    return S.Footprints([f"a{i}" for i in range(n)], preds, outs, readers, size, local)


def brute_force_peak(fp: S.Footprints) -> tuple[int, int]:
    """Minimum peak over every topological order, enumerated one by one; and how many orders there were."""
    n = len(fp.names)
    best, count = None, 0

    def rec(done: int, depth: int, peak: int) -> None:
        nonlocal best, count
        if depth == n:
            count += 1
            best = peak if best is None or peak < best else best
            return
        for b in fp.ready(done):  # every order, no pruning: the peak is carried along, not bounded
            rec(done | 1 << b, depth + 1, max(peak, fp.during(done, b)))

    rec(0, 0, 0)
    assert best is not None
    return best, count


@pytest.mark.parametrize("seed", range(24))
def test_search_equals_brute_force_minimum_peak(seed):
    n = 5 + seed % 8  # 5..12 actors
    fp = random_structure(seed, n)
    res = S.search(fp, max_states=10**9, max_time_s=600)
    assert res.proven
    want, orders = brute_force_peak(fp)
    assert res.peak == want, f"{orders} orders"
    assert S.peak_of(fp, res.order) == res.peak
    assert res.peak <= res.greedy_peak
    # the order returned is a topological order of every actor
    done = 0
    for b in res.order:
        assert fp.preds[b] & ~done == 0
        done |= 1 << b
    assert done == (1 << n) - 1


def test_state_bound_stops_the_search_and_says_so():
    fp = random_structure(3, 12)
    res = S.search(fp, max_states=2, max_time_s=600)
    assert not res.proven and res.states <= 2
    assert S.peak_of(fp, res.order) == res.peak  # still a valid order, the greedy one at worst


def test_fig35_reduced_peak_is_at_most_predictable():
    """Thesis figure 3.5: the reduced method finishes gain -> mul -> output before the add."""
    g = load_graph(ROOT / "examples" / "pipeline" / "fig35.yaml")
    fp = S.Footprints.of(g)
    peaks = {}
    for h in ("predictable", "fixed", "reduced"):
        s = compile_graph(g, threads=2, heuristic=h, memory="reuse")
        first = {}
        for x in s.inst.subboxes:
            first[x.box] = min(first.get(x.box, (float("inf"), 0)), (s.plan.start[x.index], x.index))
        order = sorted(range(len(g.boxes)), key=lambda i: first[g.boxes[i].name])
        peaks[h] = S.peak_of(fp, order)
        if h == "reduced":
            names = [g.boxes[i].name for i in order]
            assert names.index("out_low") < names.index("add")
    assert peaks["reduced"] <= peaks["predictable"]
    assert peaks["reduced"] < peaks["fixed"]
