"""Execution-time profiles from a jitterscope run directory (`etp: {run: DIR, ...}`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from jitterscope import rundir
from jitterscope.ptts.etp_run import wall_times_ns
from jitterscope.ptts.model import ModelError, model_from_dict


def _wall_brute(starts, durs, s, base):
    """Step through time: the work advances only outside detours."""
    t, left = s, base
    for st, du in sorted(zip(starts, durs)):
        en = st + du
        if en <= t:
            continue
        if st <= t:  # inside a detour at t: wait for its end
            t = en
            continue
        if st - t >= left:  # done before this detour
            break
        left -= st - t
        t = en
    return t + left - s


def test_wall_times_against_a_step_by_step_walk():
    rng = np.random.default_rng(3)
    gaps = rng.integers(50, 400, size=300)
    durs = rng.integers(1, 120, size=300)
    starts = np.cumsum(gaps + np.concatenate([[0], durs[:-1]]))
    run_ns = int(starts[-1] + durs[-1] + 100)
    for base in (1, 37, 250, 1000):
        got = wall_times_ns(starts, durs, run_ns, base, samples=500)
        s = np.linspace(0, run_ns - base, num=500, endpoint=False).astype(np.int64)
        want = np.array([_wall_brute(starts.tolist(), durs.tolist(), int(x), base) for x in s])
        want = want[s + want <= run_ns]
        assert got.tolist() == want.tolist()


def test_detours_overlapping_by_rounding_are_merged():
    # TSC-to-ns conversion can make a detour end 1 ns after the next one starts
    starts = np.array([100, 169, 500])
    durs = np.array([70, 30, 10])
    merged = wall_times_ns(np.array([100, 500]), np.array([99, 10]), 2000, 300, samples=200)
    assert wall_times_ns(starts, durs, 2000, 300, samples=200).tolist() == merged.tolist()


def test_no_noise_gives_the_base():
    w = wall_times_ns(np.zeros(0, np.int64), np.zeros(0, np.int64), 10_000, 1000, samples=50)
    assert set(w.tolist()) == {1000}


def _write_run(path, cpus, detours, duration_s):
    path.mkdir()
    meta = rundir.base_meta(
        kind="measure",
        id=path.name,
        host="test",
        kernel="test",
        command_line=["test"],
        start="2026-01-01T00:00:00+00:00",
        start_unix_ns=0,
        duration_s=duration_s,
        interrupted=False,
        cpus=cpus,
        cpu_model="test",
        clocksource="tsc",
        virtualization=None,
        options={"threshold_ns": 1000},
        tsc_hz=1e9,
        t0_tsc=0,
        tracing={"enabled": False, "reason": "test"},
        lost_events=0,
        probe={},
    )
    rundir.write_json(path / "meta.json", meta)
    rundir.write_json(
        path / "summary.json", {"run": {}, "cpus": {}, "sources": [], "chains": [], "unexplained": {}, "lost_events": 0}
    )
    cpu, st, du = zip(*detours) if detours else ((), (), ())
    rundir.write_table(
        path,
        "detours",
        pa.table(
            {
                "cpu": pa.array(cpu, pa.int32()),
                "start_ns": pa.array(st, pa.int64()),
                "duration_ns": pa.array(du, pa.int64()),
            }
        ),
    )
    return path


def test_profile_from_a_run_with_a_periodic_tick(tmp_path):
    # CPU 1: a 100 us detour every 4 ms (a timer tick); CPU 2: quiet
    ticks = [(1, t, 100_000) for t in range(2_000_000, 1_000_000_000, 4_000_000)]
    run = _write_run(tmp_path / "run", [1, 2], ticks, 1.0)
    m = model_from_dict(
        {
            "resolution": "0.1ms",
            "components": [
                {"name": "gpu", "period": "16.6ms", "etp": {"run": str(run), "cpu": 1, "base": "11ms"}},
                {"name": "quiet", "period": "16.7ms", "etp": {"run": str(run), "cpu": 2, "base": "8ms"}},
            ],
        }
    )
    gpu, quiet = m.components[0].etp, m.components[1].etp
    # 11 ms of work meets 2 or 3 ticks of 0.1 ms: 11.2 or 11.3 ms; probabilities from the phase
    assert gpu.support.tolist() == [112, 113]
    assert gpu.prob.sum() == pytest.approx(1.0)
    # over one 4 ms cycle (tick at [0, 0.1) ms): a start in (0.8, 4) meets 3 ticks (11.3 ms), one in
    # [0.1, 0.8] meets 2 (11.2 ms), one inside the tick waits for its end: 11.2..11.3 ms, nearest tick
    # 11.3 when s < 0.05. P(11.3 ms) = (3.2 + 0.05) / 4 = 0.8125
    assert gpu.prob[1] == pytest.approx(0.8125, abs=0.002)
    assert quiet.support.tolist() == [80] and quiet.prob.tolist() == [1.0]


def test_run_profile_errors_name_component_and_field(tmp_path):
    run = _write_run(tmp_path / "run", [1, 2], [(1, 10, 5)], 0.01)

    def err(opts):
        with pytest.raises(ModelError) as ei:
            model_from_dict(
                {
                    "resolution": "1us",
                    "components": [{"name": "gpu", "period": "1ms", "etp": {"run": str(run), **opts}}],
                }
            )
        assert "'gpu'" in str(ei.value) and "\n" not in str(ei.value)
        return str(ei.value)

    assert "base" in err({"cpu": 1})
    assert "cpu" in err({"base": "10us"})  # two CPUs measured: must say which
    assert "cpu" in err({"base": "10us", "cpu": 7})
    assert "round" in err({"base": "10us", "cpu": 1, "round": "down"})
    assert "unknown key 'scale'" in err({"base": "10us", "cpu": 1, "scale": 2})
    assert "shorter than the base" in err({"base": "20ms", "cpu": 1})
    with pytest.raises(ModelError, match="'gpu'.*run"):
        model_from_dict(
            {
                "resolution": "1us",
                "components": [{"name": "gpu", "period": "1ms", "etp": {"run": str(tmp_path / "nope"), "base": "1us"}}],
            }
        )


def test_a_cluster_run_gives_one_named_node_never_the_nodes_merged(tmp_path):
    from tests.fixtures_runs import build_cluster_run

    run = build_cluster_run(tmp_path / "cl", nodes=[("n1", 1), ("n2", 1)])

    def model(**opts):
        return model_from_dict(
            {
                "resolution": "10us",
                "components": [{"name": "gpu", "period": "100ms", "etp": {"run": str(run), "base": "11ms", **opts}}],
            }
        )

    with pytest.raises(ModelError, match=r"etp.node: a cluster run of 2 nodes \(n1:1, n2:1\); say which one"):
        model()
    with pytest.raises(ModelError, match="'n3:1' is not one of them"):
        model(node="n3:1")
    one = model(node="n2:1").components[0].etp
    assert one.prob.sum() == pytest.approx(1.0) and one.support.min() >= 1100
    # the profile is n2's alone: it differs from n1's (their noise differs)
    other = model(node="n1:1").components[0].etp
    assert one.support.tolist() != other.support.tolist() or one.prob.tolist() != other.prob.tolist()


def test_node_is_only_for_cluster_runs(tmp_path):
    run = _write_run(tmp_path / "run", [1], [(1, 10, 5)], 0.1)
    with pytest.raises(ModelError, match="etp.node: only for a cluster run"):
        model_from_dict(
            {
                "resolution": "1us",
                "components": [
                    {"name": "gpu", "period": "1ms", "etp": {"run": str(run), "base": "10us", "node": "a:1"}}
                ],
            }
        )
