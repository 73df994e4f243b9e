"""Cluster analysis without MPI: outliers, the cluster summary, the BSP predictors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from jitterscope.cluster import outliers as outl
from jitterscope.cluster.measure import choose_cpu, parse_cpu_map, shared_cpu_warnings
from jitterscope.cluster.predict import bsp_job, expected_max, fitted, trace_driven
from jitterscope.cluster.summary import build_summary, source_key
from jitterscope.errors import JitterscopeError
from jitterscope.simulate import Timeline
from jitterscope.simulate import distributions as D
from jitterscope.simulate.runs import phase_delays


# -- outliers ------------------------------------------------------------------------------------
def test_modified_z_matches_iglewicz_hoaglin_by_hand() -> None:
    # Node 0 against nodes 1..4: others = [10, 12, 14, 16] -> median 13, MAD 2,
    # so z = (40 - 13) / (1.4826 * 2) = 9.105...
    values = np.array([[40.0], [10.0], [12.0], [14.0], [16.0]])
    z, med = outl.robust_z(values, floor=0.0)
    assert med[0, 0] == 13.0
    assert z[0, 0] == pytest.approx(27 / (1.4826 * 2), rel=1e-9)


def test_one_node_with_an_extra_source_is_the_outlier_with_that_source() -> None:
    nodes = ["a:1", "b:1", "c:1", "d:1", "e:1"]
    features = ["irq:local_timer", "thread:daemon"]
    tick = [4000.0, 4100.0, 3900.0, 4050.0, 3980.0]
    daemon = [0.0, 0.0, 25000.0, 0.0, 0.0]
    ppm = np.column_stack([tick, daemon])
    out = outl.find_outliers(nodes, features, ppm, ppm.sum(axis=1))
    assert [o["node"] for o in out] == ["c:1"]
    assert [s["source"] for s in out[0]["sources"]] == ["thread:daemon"]


def test_small_differences_are_not_outliers_and_two_nodes_give_none() -> None:
    ppm = np.array([[1000.0], [1000.0], [1000.0], [1030.0]])  # 30 ppm < floor (10 ppm x 3.5 ... 1% of 1000)
    assert outl.find_outliers(list("abcd"), ["irq:x"], ppm, ppm[:, 0]) == []
    two = np.array([[0.0], [5e5]])
    assert outl.find_outliers(["a", "b"], ["irq:x"], two, two[:, 0]) == []


def test_quieter_node_is_not_an_outlier() -> None:
    ppm = np.array([[5000.0], [5100.0], [4900.0], [0.0]])
    assert outl.find_outliers(list("abcd"), ["irq:x"], ppm, ppm[:, 0]) == []


# -- summary ----------------------------------------------------------------------------------------
def test_per_cpu_kernel_threads_compare_across_cpus() -> None:
    assert source_key("thread", "kworker/1:2") == source_key("thread", "kworker/0:1") == "thread:kworker/*:*"
    assert source_key("thread", "ksoftirqd/3") == "thread:ksoftirqd/*"
    assert source_key("thread", "kworker/u4:0") == "thread:kworker/u*:*"
    assert source_key("thread", "irq/25-virtio0") == "thread:irq/25-virtio0"  # not a CPU number
    assert source_key("irq", "virtio3-rx") == "irq:virtio3-rx"


def _node(host: str, cpu: int, rank: int, sources: list[tuple[str, str, int]], unexplained: int = 0) -> dict:
    total = sum(s[2] for s in sources) + unexplained
    return {
        "host": host,
        "cpu": cpu,
        "rank": rank,
        "summary": {
            "run": {"duration_s": 1.0, "tracing": True},
            "cpus": {
                str(cpu): {
                    "noise_ns": total,
                    "noise_ppm": total / 1e3,
                    "detours": 10,
                    "p99_ns": 1.0,
                    "max_ns": 2,
                    "resolution_ns": 8.0,
                }
            },
            "sources": [{"kind": k, "name": n, "total_ns": t} for k, n, t in sources],
            "unexplained": {"total_ns": unexplained},
            "lost_events": 0,
        },
    }


def test_cluster_summary_counts_nodes_and_finds_the_odd_one() -> None:
    nodes = [
        _node(f"n{i}", 1, i, [("irq", "local_timer", 4_000_000 + 10_000 * i), ("thread", f"kworker/1:{i}", 50_000)])
        for i in range(5)
    ]
    nodes[3]["summary"]["sources"].append({"kind": "thread", "name": "backupd", "total_ns": 30_000_000})
    nodes[3]["summary"]["cpus"]["1"]["noise_ppm"] += 30_000
    s = build_summary({"id": "x"}, nodes)
    assert s["run"]["nodes"] == 5 and s["run"]["hosts"] == 5
    assert s["noisiest"][0] == "n3:1"
    by = {(x["kind"], x["name"]): x for x in s["sources"]}
    assert by[("irq", "local_timer")]["nodes"] == 5
    assert by[("thread", "kworker/*:*")]["nodes"] == 5  # one source, though each node named it by its CPU
    assert by[("thread", "backupd")]["nodes"] == 1 and by[("thread", "backupd")]["max_node"] == "n3:1"
    assert [o["node"] for o in s["outliers"]] == ["n3:1"]
    assert s["outliers"][0]["sources"][0]["source"] == "thread:backupd"


# -- CPU choice ---------------------------------------------------------------------------------------
def test_cpu_choice_default_and_map() -> None:
    online = [0, 1, 2, 3]
    assert [choose_cpu(r, online, None) for r in range(4)] == [1, 2, 3, 0]
    assert parse_cpu_map("1,0,0,2-3") == [1, 0, 0, 2, 3]
    assert choose_cpu(2, online, [1, 0, 3]) == 3
    with pytest.raises(JitterscopeError):
        choose_cpu(3, online, [1, 0, 3])
    with pytest.raises(JitterscopeError):
        parse_cpu_map("1,x")
    w = shared_cpu_warnings(
        [
            {"rank": 0, "real_host": "h", "cpu": 1},
            {"rank": 1, "real_host": "h", "cpu": 1},
            {"rank": 2, "real_host": "g", "cpu": 1},
        ]
    )
    assert w == ["ranks 0,1 on h share CPU 1: each will see the others' probe as noise"]


# -- predictors (the simulator's engine and fits, node by node) ----------------------------------------
def test_periodic_noise_on_one_node_slows_the_job_by_its_duty_cycle() -> None:
    # 10% duty cycle, phase not a multiple of the period: each node's work takes
    # W / 0.9 on average, and the job waits for it (the other node is quiet).
    period, busy, work = 1000.0, 100.0, 370.0
    starts = np.arange(0, 1e6, period)
    noisy = Timeline(1e6, starts, np.full(starts.size, busy))
    quiet = Timeline(1e6, np.zeros(0), np.zeros(0))
    p = trace_driven([noisy, quiet], bsp_job(2, 2000, work, "barrier", 0.0, replications=200, seed=3))
    assert p.runtime_s * 1e9 / 2000 == pytest.approx(work / 0.9, rel=0.01)
    assert p.ci95_s is not None and p.ci95_s < 0.01 * p.runtime_s


def test_bsp_job_spreads_the_sync_over_its_rounds() -> None:
    for n, rounds in ((2, 1), (4, 2), (5, 3)):
        job = bsp_job(n, 10, 5e6, "barrier", 3000.0)
        assert job.rounds(n) == rounds
        assert job.ideal_s(n, 10) == pytest.approx(10 * (5e6 + 3000.0) / 1e9)


def test_expected_max_of_exponentials_is_mean_times_harmonic_number() -> None:
    mean = 50e-6
    for n in (1, 10, 100):
        h = sum(1 / k for k in range(1, n + 1))
        assert expected_max([D.exponential(mean)] * n) == pytest.approx(mean * h, rel=1e-4)


def test_bernoulli_delays_expected_max() -> None:
    # Delay d with probability p, else 0: E[max of n] = (1-(1-p)^n) d.
    d, p, n = 1e-3, 0.1, 8
    assert expected_max([D.bernoulli(p, d)] * n) == pytest.approx((1 - (1 - p) ** n) * d, rel=1e-6)


def test_expected_max_of_different_nodes() -> None:
    # A node always 1 ms late and a quiet one: the phase waits 1 ms.  Two
    # exponentials of means a, b: E[max] = a + b - ab/(a+b).
    assert expected_max([D.SplicedTail(np.full(50, 1e-3), 1e-3, 0.0, 1.0), None]) == pytest.approx(1e-3)
    a, b = 20e-6, 70e-6
    assert expected_max([D.exponential(a), D.exponential(b)]) == pytest.approx(a + b - a * b / (a + b), rel=1e-4)


def test_fitted_prediction_for_regular_noise() -> None:
    starts = np.arange(0, 1e7, 1000.0)
    tl = Timeline(1e7, starts, np.full(starts.size, 100.0))
    delays = phase_delays([tl], 900.0)
    assert np.allclose(delays, 100.0)  # 900 of work always meets exactly one 100 ns gap
    pred = fitted([tl], bsp_job(1, 100, 900.0, "barrier", 0.0))
    assert pred.runtime_s * 1e9 / 100 == pytest.approx(1000.0, rel=1e-3)


def test_import_jitterscope_never_imports_mpi() -> None:
    code = (
        "import sys, jitterscope.cli as c; c.build_parser(); "
        "import jitterscope.cluster.measure, jitterscope.cluster.bsp; "
        "assert 'mpi4py' not in sys.modules, 'mpi4py imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cluster_without_mpi_says_how_to_get_it() -> None:
    code = (
        "import sys; sys.modules['mpi4py'] = None; from jitterscope.cli import main; "
        "sys.exit(main(['cluster', 'measure', '--duration', '1s']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "make mpi" in proc.stderr and "pip install -e '.[mpi]'" in proc.stderr


def test_more_ranks_than_cpus_on_a_host_names_the_rule() -> None:
    from jitterscope.cluster.measure import duplicate_nodes

    online = [0, 1]
    peers = [
        {"rank": r, "real_host": "vm", "node": "vm", "online": 2, "cpu": choose_cpu(r, online, None)} for r in range(4)
    ]
    msg = duplicate_nodes(peers, mapped=False)
    assert msg is not None and "host vm runs 4 ranks but has 2 online CPUs" in msg and "mpiexec -n 2" in msg
    assert duplicate_nodes(peers[:2], mapped=False) is None  # any -n up to the CPU count works
    named = [dict(p, node=f"node{p['rank']}") for p in peers]  # sharing CPUs on purpose: distinct nodes
    assert duplicate_nodes(named, mapped=True) is None
