"""summary.json built from a hand-made attribution: shares, order, chains, periods."""

import numpy as np

from jitterscope.measure.attribution import attribute, source_table
from jitterscope.measure.build import make_summary


def build(n_ticks=100):
    # CPU 1: a 4 ms tick (local_timer then TIMER softirq) and one 2 ms daemon burst.
    segs, dets = [], []
    for k in range(n_ticks):
        t = 1_000_000 + k * 4_000_000
        segs += [(1, t, t + 3000, "irq", "local_timer"), (1, t + 3000, t + 5000, "softirq", "TIMER")]
        dets.append((1, t, 6000))  # 1000 ns no one covers
    segs.append((1, 202_000_000, 204_000_000, "thread", "daemon"))
    dets.append((1, 202_000_000, 2_000_000))
    segs.sort(key=lambda s: s[1])
    dets.sort(key=lambda d: d[1])
    kinds = np.array([s[3] for s in segs], dtype=object)
    names = np.array([s[4] for s in segs], dtype=object)
    sources, codes = source_table(kinds, names)
    s = np.array([x[:3] for x in segs], dtype=np.int64)
    d = np.array(dets, dtype=np.int64)
    att = attribute(d[:, 0], d[:, 1], d[:, 2], s[:, 0], s[:, 1], s[:, 2], codes, sources)
    meta = {
        "id": "x",
        "host": "h",
        "kernel": "k",
        "start": "t",
        "duration_s": 0.5,
        "options": {"threshold_ns": 1000},
        "cpus": [1],
        "tracing": {"enabled": True, "reason": None},
        "virtualization": None,
        "steal_ns": 0,
        "lost_events": 0,
    }
    return make_summary(meta, att, d[:, 0], d[:, 1], d[:, 2], {1: 0.5e9}, {1: 20.0}, {})


def test_sources_sorted_with_shares_that_add_up():
    s = build()
    names = [x["name"] for x in s["sources"]]
    assert names == ["daemon", "local_timer", "TIMER"]
    total = s["cpus"]["1"]["noise_ns"]
    assert total == 100 * 6000 + 2_000_000
    assert abs(sum(x["share"] for x in s["sources"]) + s["unexplained"]["share"] - 1) < 1e-5
    tick = s["sources"][1]
    assert tick["count"] == 100 and tick["total_ns"] == 300_000 and tick["max_ns"] == 3000


def test_tick_period_found_daemon_not_periodic():
    s = build()
    by = {x["name"]: x for x in s["sources"]}
    assert abs(by["local_timer"]["period_s"] - 0.004) < 1e-9
    assert by["daemon"]["period_s"] is None


def test_chain_of_tick_then_softirq():
    s = build()
    top = s["chains"][0]
    assert top["sources"] == ["irq:local_timer", "softirq:TIMER"] and top["count"] == 100


def test_cpu_table():
    c = build()["cpus"]["1"]
    assert c["detours"] == 101 and c["max_ns"] == 2_000_000
    assert c["noise_ppm"] == round(c["noise_ns"] / 0.5e9 * 1e6, 3)
    assert c["resolution_ns"] == 20.0


def test_unexplained_in_a_guest_says_when_steal_time_is_not_known():
    """A killed run whose capture kept no steal time: not "0 ms" (what the run said before it was known)."""
    from jitterscope.measure.summary import likely_unexplained

    unknown = likely_unexplained("kvm", True, None, None, 5e6)
    assert "steal time during the run is not known" in unknown and "0 ms" not in unknown
    assert "steal time during the run was 2 ms" in likely_unexplained("kvm", True, None, 2e6, 5e6)
