"""`place --compare`'s arithmetic (place/compare.py): per-task ratios to the baseline and their geometric mean
over tasks (Knauerhase et al. 2008, L77), noise of the protected tasks, and the policy-set syntax."""

from __future__ import annotations

import math

import pytest

from jitterscope.errors import UsageError
from jitterscope.place.compare import parse_sets, summarise


def _row(
    rep: int, pol: str, task: int, ops_s: float, cpu_s: float, wait: float, prot: bool = False, alive: bool = True
) -> dict:
    return {
        "repetition": rep,
        "policies": pol,
        "run": f"{rep:02d}-{pol}",
        "task": task,
        "name": f"t{task}",
        "protected": prot,
        "ops_per_s": ops_s,
        "ops_per_cpu_s": cpu_s,
        "wait_per_cpu_s": wait,
        "preempt_per_cpu_s": 10.0,
        "latency_p99_ns": None,
        "alive": alive,
        "coheavy_fraction": 0.5,
    }


def test_speedups_are_geometric_means_of_per_task_ratios_of_repetition_means() -> None:
    rows = [
        _row(0, "stock", 0, 100, 200, 1.0),
        _row(1, "stock", 0, 300, 200, 1.0),  # mean 200
        _row(0, "stock", 1, 50, 100, 0.5, prot=True),
        _row(1, "stock", 1, 50, 100, 0.5, prot=True),
        _row(0, "L", 0, 400, 300, 0.2),
        _row(1, "L", 0, 400, 300, 0.2),  # x2.0 wall, x1.5 CPU
        _row(0, "L", 1, 25, 100, 0.1, prot=True),
        _row(1, "L", 1, 25, 100, 0.3, prot=True),
    ]  # x0.5, x1.0
    s = summarise(rows, ["stock", "L"], 2, 1e9, "complete")
    wall, cpu = s["policies"]["L"]["speedup_wall"], s["policies"]["L"]["speedup_cpu"]
    assert wall["gmean"] == pytest.approx(math.sqrt(2.0 * 0.5)) and (wall["min"], wall["max"]) == (0.5, 2.0)
    assert cpu["gmean"] == pytest.approx(math.sqrt(1.5 * 1.0))
    assert s["policies"]["stock"]["speedup_wall"]["gmean"] == pytest.approx(1.0)
    # noise: the protected task only (mean over repetitions), and its ratio to the baseline
    assert s["noise_of"] == "protected"
    assert s["policies"]["L"]["noise"]["wait_per_cpu_s"] == pytest.approx(0.2)
    assert s["policies"]["L"]["noise_ratio"]["wait_per_cpu_s"] == pytest.approx(0.4)
    assert s["tasks"][1]["by_policy"]["L"]["repetitions"] == 2


def test_a_task_that_died_makes_the_geometric_mean_zero_and_every_task_is_noise_without_protect() -> None:
    rows = [
        _row(0, "stock", 0, 100, 100, 1.0, alive=False),
        _row(0, "stock", 1, 100, 100, 1.0),
        _row(0, "F", 0, 0, 0, 1.0),
        _row(0, "F", 1, 100, 100, 3.0),
    ]
    s = summarise(rows, ["stock", "F"], 1, None, "interrupted")
    assert s["policies"]["F"]["speedup_wall"]["gmean"] == 0.0
    assert s["tasks"][0]["by_policy"]["stock"]["died"] == 1
    assert s["noise_of"] == "all" and s["policies"]["F"]["noise"]["wait_per_cpu_s"] == pytest.approx(2.0)


def test_policy_sets() -> None:
    assert parse_sets("stock, L, L+C,worst") == [
        ("stock", frozenset({"stock"})),
        ("L", frozenset({"L"})),
        ("L+C", frozenset({"L", "C"})),
        ("worst", frozenset({"worst"})),
    ]
    for bad in ("stock", "stock,stock", "stock,Q", "stock,C"):
        with pytest.raises(UsageError):
            parse_sets(bad)


def test_labels_written_by_profile_carry_their_stand_in_source(tmp_path) -> None:
    from jitterscope.place.plan import declared
    from jitterscope.place.profile import labels_yaml, parse_cachegrind

    cg = tmp_path / "cg.out"
    cg.write_text(
        "desc: I1 cache: 32768 B, 64 B, 8-way associative\ncmd: x\nevents: Ir I1mr ILmr Dr D1mr DLmr Dw "
        "D1mw DLmw\nfl=x\n1 2 3\nsummary: 1000 5 1 300 20 4 200 10 5\n"
    )
    c = parse_cachegrind(cg)
    assert c["Ir"] == 1000 and c["ILmr"] + c["DLmr"] + c["DLmw"] == 10
    f = tmp_path / "labels.yaml"
    f.write_text(
        labels_yaml(
            {"mcf": {"weight": 0.01, "source": "profiled", "ll_misses": 10}, "eon": {"weight": 0.5, "source": "probe"}},
            "cachegrind",
        )
        + "swim: heavy\n"
    )
    w, src = declared(["eon=light"], f)
    assert w == {"mcf": 0.01, "eon": 0.0, "swim": 1.0}
    assert src == {"mcf": "profiled", "eon": "declared", "swim": "declared"}
    f.write_text("mcf: {weight: 0.1, source: guessed}\n")
    with pytest.raises(UsageError, match="mcf"):
        declared([], f)
