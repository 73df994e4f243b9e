"""Trace-driven engine: the work-conserving timeline, periodic and co-scheduled
noise, run directories, per-source removal and the size guard."""

from __future__ import annotations

import numpy as np
import pytest

from jitterscope.errors import JitterscopeError
from jitterscope.simulate import Job, Timeline, by_source, parse_noise, periodic_timeline, simulate
from jitterscope.simulate.runs import load_noise, phase_delays
from jitterscope.simulate.timeline import _SortedIndex
from tests.support.noise_runs import periodic_source, write_noise_run


def _brute_finish(starts, durs, period, t0, work):
    """Step through integer ns: the reference for A^-1(A(t0) + W) (work-conserving)."""
    busy = np.zeros(int(period) * 4, dtype=bool)
    for k in range(4):
        for s, d in zip(starts, durs):
            busy[int(s + k * period) : int(s + d + k * period)] = True
    free = np.flatnonzero(~busy[int(t0) :])
    return int(t0) + free[int(work) - 1] + 1


def test_timeline_finish_matches_stepping_through_time():
    rng = np.random.default_rng(5)
    period = 20_000
    starts = np.sort(rng.choice(np.arange(0, period - 400, 400), 25, replace=False)).astype(float)
    durs = rng.integers(1, 300, 25).astype(float)
    tl = Timeline(float(period), starts, durs)
    t0 = rng.integers(0, 2 * period, 200).astype(float)
    work = rng.integers(1, period, 200).astype(float)
    got, _ = tl.finish(t0, work)
    ref = [_brute_finish(starts, durs, period, a, w) for a, w in zip(t0, work)]
    assert np.array_equal(got, np.array(ref, dtype=float))


def test_sorted_index_equals_searchsorted():
    rng = np.random.default_rng(0)
    for v in (np.sort(rng.uniform(0, 100, 500)), np.arange(0, 100, 4.0), np.array([0.0, 0.0, 50.0, 100.0])):
        ix = _SortedIndex(v, 100.0)
        q = np.concatenate([rng.uniform(0, 101, 5000), v, np.nextafter(v, 200)])
        assert np.array_equal(ix.count_le(q), np.searchsorted(v, q, "right"))
        assert np.array_equal(ix.count_lt(q), np.searchsorted(v, q, "left"))


def test_one_node_runs_at_the_noise_free_fraction():
    # work-conserving: P phases of W end within one detour of P*W*T/(T-d)
    T, d, W, P = 10e-3, 25e-6, 1e-3, 500
    sim = simulate(parse_noise("periodic(period=10ms,duration=25us)"), Job((1,), (P,), W, sync="none", replications=5))
    for rt in sim.point(1, P).runtimes_s:
        assert abs(rt - P * W * T / (T - d)) <= d + 1e-12


def test_coscheduled_periodic_noise_does_not_grow_with_nodes():
    spec = parse_noise("periodic(period=10ms,duration=25us)")
    nodes = (1, 10, 1000, 100_000)
    co = simulate(spec, Job(nodes, (200,), 1e-3, sync="none", cosched=True, replications=5))
    slow = [co.point(n, 200).slowdown for n in nodes]
    assert slow == pytest.approx([slow[0]] * len(nodes), rel=1e-12)
    # with a barrier only the noise-free sync cost (in ideal) grows: the slowdown stays flat
    cob = simulate(spec, Job(nodes, (200,), 1e-3, cosched=True, replications=5))
    assert max(cob.point(n, 200).slowdown for n in nodes) - min(cob.point(n, 200).slowdown for n in nodes) < 0.001
    # independent offsets: some node is always in its detour -> ~d/W per phase
    ind = simulate(spec, Job((1, 1000), (200,), 1e-3, sync="none", replications=3))
    assert ind.point(1000, 200).slowdown > 5 * ind.point(1, 200).slowdown
    assert ind.point(1000, 200).slowdown == pytest.approx(25e-6 / 1e-3, rel=0.05)


def test_dissemination_barrier_adds_log2_rounds():
    quiet = Timeline(1e9, np.array([5e8]), np.array([1.0]))
    from jitterscope.simulate.trace import simulate_timelines

    job = Job((1, 2, 3, 1024, 1025), (10,), 1e-4, link_latency_s=3e-6, replications=2)
    sim = simulate_timelines([quiet], job, {})
    for n, rounds in [(1, 0), (2, 1), (3, 2), (1024, 10), (1025, 11)]:
        r = sim.point(n, 10)
        assert r.ideal_s == pytest.approx(10 * (1e-4 + rounds * 3e-6))
        assert r.runtime_s <= r.ideal_s + 2e-9


def test_own_placement_keeps_each_node_on_its_timeline():
    from jitterscope.simulate.trace import simulate_timelines

    # 10% duty cycle on node 0 only, phase not a multiple of the period: node 0's
    # work takes W / 0.9 on average and the job waits for it every phase.
    period, busy, work = 1000.0, 100.0, 370.0
    noisy = Timeline(1e6, np.arange(0, 1e6, period), np.full(1000, busy))
    quiet = Timeline(1e6, np.zeros(0), np.zeros(0))
    job = Job((2,), (2000,), work * 1e-9, sync="none", replications=50, seed=3)
    own = simulate_timelines([noisy, quiet], job, {}, placement="own").point(2, 2000)
    assert own.runtime_s * 1e9 / 2000 == pytest.approx(work / 0.9, rel=0.01)
    # A random timeline per node sometimes puts both nodes on the quiet one.
    rand = simulate_timelines([noisy, quiet], job, {}).point(2, 2000)
    assert rand.runtimes_s.min() < own.runtimes_s.min()
    with pytest.raises(ValueError, match="one node per timeline"):
        simulate_timelines([noisy, quiet], Job((3,), (10,), 1e-6), {}, placement="own")


def test_own_placement_keeps_one_machines_timelines_aligned():
    from jitterscope.simulate.trace import simulate_timelines

    # Two CPUs of one machine stalled together for 50 us in a 1 ms timeline (the fair server's grants to
    # other tasks, for one), and a job of 0.9 ms of work, which meets the stall once or in part.  Replayed
    # together the CPUs delay the job by that once; shifted apart, nearly always twice (in two phases).
    stall = Timeline(1e6, np.array([400e3]), np.array([50e3]))
    job = Job((2,), (180,), 5e-6, sync="none", replications=100, seed=7)
    ideal_ns = 180 * 5e3
    one = simulate_timelines([stall, stall], job, {}, placement="own", hosts=["a", "a"]).point(2, 180)
    assert (one.runtimes_s * 1e9 - ideal_ns).max() <= 50e3 + 1e-3
    apart = simulate_timelines([stall, stall], job, {}, placement="own", hosts=["a", "b"]).point(2, 180)
    assert np.median(apart.runtimes_s * 1e9 - ideal_ns) > 90e3
    default = simulate_timelines([stall, stall], job, {}, placement="own").point(2, 180)  # one offset per node
    assert default.runtimes_s.tolist() == apart.runtimes_s.tolist()
    with pytest.raises(ValueError, match="1 hosts for 2 timelines"):
        simulate_timelines([stall, stall], job, {}, placement="own", hosts=["a"])


def test_recorded_placement_replays_from_offset_zero():
    from jitterscope.simulate.trace import simulate_timelines

    # One 50 ns detour at 120 ns on node 0: phases of 100 ns from time 0 meet it
    # in phase 2 only, so 3 phases take 350 ns; node 1 is quiet.
    hit = Timeline(1e6, np.array([120.0]), np.array([50.0]))
    quiet = Timeline(1e6, np.zeros(0), np.zeros(0))
    job = Job((2,), (1, 3), 100e-9, sync="none", replications=4)
    sim = simulate_timelines([hit, quiet], job, {}, placement="recorded")
    assert sim.point(2, 1).runtimes_s * 1e9 == pytest.approx([100.0] * 4)
    assert sim.point(2, 3).runtimes_s * 1e9 == pytest.approx([350.0] * 4)


@pytest.fixture(scope="module")
def daemon_run(tmp_path_factory):
    """CPU 1: a 5 us tick every 1 ms (many, most of the noise) and a 2 ms daemon
    every second (rare); CPU 2: the tick and a TIMER softirq."""
    path = tmp_path_factory.mktemp("runs") / "daemon"
    r = 10e9
    return write_noise_run(
        path,
        [
            periodic_source("irq", "local_timer", 1, 1e6, 5e3, r, phase_ns=1234, jitter_ns=200, seed=1),
            periodic_source("thread", "daemon", 1, 1e9, 2e6, r, phase_ns=333e6, seed=2),
            periodic_source("irq", "local_timer", 2, 1e6, 5e3, r, phase_ns=777, jitter_ns=200, seed=3),
            periodic_source("softirq", "TIMER", 2, 4e6, 8e3, r, phase_ns=1300, seed=4),
        ],
        10.0,
    )


def test_phase_delays_from_a_periodic_run(tmp_path):
    run = write_noise_run(tmp_path / "p", [periodic_source("irq", "tick", 1, 4e6, 10e3, 1e9, phase_ns=2e6)], 1.0)
    noise = load_noise(str(run))
    d = phase_delays(noise.timelines(), 1e6)
    # phases of 1 ms against a 10 us detour every 4 ms: one in four phases is hit, by exactly 10 us
    assert len(d) == int((1e9 - 250 * 10e3) // 1e6)
    assert set(np.round(d).tolist()) == {0.0, 10e3}
    assert np.mean(d > 0) == pytest.approx(0.25, abs=0.01)


def test_by_source_ranks_rare_long_daemon_above_frequent_tick(daemon_run):
    spec = parse_noise(str(daemon_run))
    base, rank = by_source(spec, Job((1, 10_000), (50,), 1e-3, replications=3))
    names = [s["name"] for s in rank["sources"]]
    assert names[0] == "daemon"
    share = {s["name"]: s["share"] for s in rank["sources"]}
    assert share["local_timer"] > share["daemon"]  # ... though it is the smaller share
    top = rank["sources"][0]
    assert top["slowdown"] < rank["baseline_slowdown"] / 10
    assert rank["baseline_slowdown"] == base.point(10_000, 50).slowdown
    # at one node the daemon matters far less than at 10,000
    assert base.point(1, 50).slowdown < rank["baseline_slowdown"] / 20


def test_by_source_needs_attribution(tmp_path):
    run = write_noise_run(tmp_path / "untraced", [periodic_source("irq", "tick", 1, 1e6, 5e3, 1e9)], 1.0, tracing=False)
    with pytest.raises(JitterscopeError, match="no attribution"):
        by_source(parse_noise(str(run)), Job((10,), (10,), 1e-3, replications=2))
    with pytest.raises(JitterscopeError, match="needs a measured run"):
        by_source(parse_noise("exponential(mean=1us)"), Job((10,), (10,), 1e-3))


def test_absurd_trace_sizes_are_refused_with_what_fits(daemon_run):
    with pytest.raises(JitterscopeError) as err:
        simulate(parse_noise(str(daemon_run)), Job((10**9,), (100,), 1e-3, replications=10))
    msg = str(err.value)
    assert "fits up to" in msg and "fit:" in msg and "GiB" in msg and "\n" not in msg


def test_periodic_spec_and_trace_agree(tmp_path):
    run = write_noise_run(tmp_path / "per", [periodic_source("irq", "tick", 1, 10e6, 25e3, 10e9)], 10.0)
    job = Job((1, 100), (100,), 1e-3, sync="none", replications=20)
    a = simulate(parse_noise("periodic(period=10ms,duration=25us)"), job)
    b = simulate(parse_noise(str(run)), job)
    for n in (1, 100):
        ra, rb = a.point(n, 100), b.point(n, 100)
        lo_a, hi_a = ra.ci95_s
        lo_b, hi_b = rb.ci95_s
        # the confidence intervals overlap (1 ns slack: at 100 nodes both are nearly exact)
        assert lo_a <= hi_b + 1e-9 and lo_b <= hi_a + 1e-9
    assert periodic_timeline(10e6, 25e3).noise_fraction == pytest.approx(0.0025)
