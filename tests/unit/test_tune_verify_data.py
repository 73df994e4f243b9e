"""tune verify's conclusions from two runs: targeted sources with compare's tests, testability, overall CIs."""

from __future__ import annotations

from dataclasses import dataclass, field

from jitterscope.rundir import load_run
from jitterscope.tune.verify_data import analyse, can_test, targets_of
from tests.fixtures_runs import Injector, build_run


@dataclass
class FakeChange:  # what analyse reads of an applied change
    name: str
    value: str
    sources: list = field(default_factory=list)


def test_testable_is_the_smallest_p_value_of_the_exact_test():
    # equal exposures: no occurrence left of k gives p = 2 * 0.5**k; below 0.01 from k = 8
    assert not can_test(7, 10.0, 10.0, 0.01)
    assert can_test(8, 10.0, 10.0, 0.01)
    assert not can_test(0, 10.0, 10.0, 0.01)
    assert can_test(5, 10.0, 10.0, 0.1) and not can_test(4, 10.0, 10.0, 0.1)
    assert not can_test(8, 40.0, 10.0, 0.01)  # a shorter second run needs more occurrences before
    assert can_test(4, 10.0, 40.0, 0.01)  # a longer one fewer


def test_targets_merge_knobs_and_gone_wins():
    ch = [
        FakeChange("task.9.affinity", "0", [{"source": "thread:kworker/1:3", "expect": "fewer", "factor": 0.5}]),
        FakeChange("workqueue.cpumask", "0", [{"source": "thread:kworker/1:0", "expect": "gone", "factor": 0.0}]),
    ]
    t = targets_of(ch)
    assert list(t) == [("thread", "kworker/1:*")]  # kworker ids compare as kworker/N:*
    assert t[("thread", "kworker/1:*")]["expect"] == "gone"
    assert t[("thread", "kworker/1:*")]["knobs"] == ["task.9.affinity=0", "workqueue.cpumask=0"]


def test_an_injector_moved_away_is_verified_and_an_unchanged_target_is_not(tmp_path):
    before = load_run(
        build_run(
            tmp_path / "b", seed=1, duration_s=4.0, injector=Injector(cpu=1, period_ns=20_000_000, busy_ns=300_000)
        )
    )
    after = load_run(build_run(tmp_path / "a", seed=2, duration_s=4.0))
    inj = FakeChange("task.4242.affinity", "0", [{"source": "thread:jitterscope-inj", "expect": "gone", "factor": 0.0}])
    r = analyse(before, after, [inj], 0.01)
    (t,) = r["targets"]
    assert t["down"] and t["as_planned"] and t["testable"]
    assert t["before"]["count"] > 100 and t["after"]["count"] == 0 and t["q"] < 1e-10
    assert r["ok"]
    o = r["overall"][1]
    assert o["base_ci95"][0] <= o["base_ppm"] <= o["base_ci95"][1]
    assert o["new_ppm"] < o["base_ppm"]
    vm = FakeChange("vm.stat_interval", "10", [{"source": "work:vmstat_update", "expect": "fewer", "factor": 0.1}])
    r2 = analyse(before, after, [inj, vm], 0.01)
    got = {x["source"]: x for x in r2["targets"]}
    assert not got["work:vmstat_update"]["as_planned"]
    assert not got["work:vmstat_update"]["down"]
    assert (not r2["ok"]) or not got["work:vmstat_update"]["testable"]
    assert r2["tests"] >= 1


def test_nothing_testable_is_not_verified(tmp_path):
    before = load_run(build_run(tmp_path / "b", seed=1, duration_s=3.0))
    after = load_run(build_run(tmp_path / "a", seed=2, duration_s=3.0))
    gone = FakeChange("task.1.affinity", "0", [{"source": "thread:no-such-daemon", "expect": "gone"}])
    r = analyse(before, after, [gone], 0.01)
    assert not r["ok"] and r["targets"][0]["verdict"].startswith("absent before")


def test_a_bare_knob_takes_its_targets_from_the_baseline_plan():
    from jitterscope.tune.planfile import PlanFile
    from jitterscope.tune.verify import _only

    plan = PlanFile.model_validate(
        {
            "format": "jitterscope-tune-plan",
            "version": 1,
            "host": "h",
            "kernel": "k",
            "cpus": [1],
            "housekeeping": [0],
            "knobs": [
                {
                    "knob": "vm.stat_interval",
                    "value": "10",
                    "sources": [{"source": "work:vmstat_update", "expect": "fewer", "factor": 0.1}],
                },
                {
                    "knob": "irq.34.affinity",
                    "value": "0",
                    "sources": [{"source": "irq:virtio4-input", "expect": "gone", "factor": 0.0}],
                },
            ],
        }
    )
    same, other = FakeChange("vm.stat_interval", "10"), FakeChange("vm.stat_interval", "60")
    cut = _only(plan, [same])
    assert [k.knob for k in cut.knobs] == ["vm.stat_interval"]
    assert same.sources == [{"source": "work:vmstat_update", "expect": "fewer", "factor": 0.1, "ppm": 0.0}]
    _only(plan, [other])
    assert other.sources[0]["factor"] is None  # not the planned value: no planned factor
    assert _only(plan, [FakeChange("kernel.timer_migration", "0")]).knobs == []
