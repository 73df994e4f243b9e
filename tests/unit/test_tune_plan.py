"""tune plan: every mapping from a source to its knob, on synthetic sources and a synthetic run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jitterscope.errors import JitterscopeError
from jitterscope.knobs import FILE_KNOBS, FileKnob, irq
from jitterscope.knobs.tasks import stat_fields
from jitterscope.rundir import load_run
from jitterscope.tune import planfile, rules, rules_threads
from jitterscope.tune.plan import make_plan
from jitterscope.tune.sources import refine, sources
from tests.fixtures_runs import build_run


@pytest.fixture
def ctx() -> rules.Ctx:
    return rules.Ctx([1], [0], "kvm")


@pytest.fixture
def knob_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The knobs the rules read, as files with known values (the machine's own values vary)."""
    for name, value, form in (
        ("vm.stat_interval", "1", "int"),
        ("kernel.timer_migration", "1", "int"),
        ("kernel.nmi_watchdog", "1", "int"),
        ("mm.thp.enabled", "always [madvise] never", "choice"),
        ("mm.ksm.run", "1", "int"),
        ("vm.compaction_proactiveness", "20", "int"),
        ("kernel.watchdog_cpumask", "0-1", "cpulist"),
        ("workqueue.cpumask", "3", "cpumask"),
    ):
        f = tmp_path / name
        f.write_text(value + "\n")
        k = FILE_KNOBS[name]
        monkeypatch.setitem(FILE_KNOBS, name, FileKnob(k.name, f, form, k.doc, k.lo, k.hi, k.choices))
    return tmp_path


def src(kind: str, name: str, ppm: float = 100.0) -> dict:
    return {"kind": kind, "name": name, "ppm": ppm, "count": 10, "share": 0.1, "max_ns": 5000, "cpus": [1]}


def knobs_of(r: dict) -> dict[str, str]:
    return {k["knob"]: k["value"] for k in r["knobs"]}


def test_interrupts(ctx, monkeypatch):
    r = rules.irq_source(src("irq", "local_timer"), ctx)
    assert r["action"] == "boot" and "nohz_full=1" in r["boot"] and r["removable_ppm"] > 0
    for ipi in ("reschedule", "call_function_single", "irq_work"):
        assert rules.irq_source(src("irq", ipi), ctx)["action"] == "none"
    monkeypatch.setattr(
        irq,
        "irqs",
        lambda: [
            irq.Irq(40, ["virtio0-input.0"], [0, 1], [1], True),
            irq.Irq(41, ["virtio1-req.0"], [0, 1], [1], False),
        ],
    )
    moved = rules.irq_source(src("irq", "virtio0-input.0"), ctx)
    assert moved["action"] == "knob" and knobs_of(moved) == {"irq.40.affinity": "0"}
    assert moved["knobs"][0]["expect"] == "gone"
    managed = rules.irq_source(src("irq", "virtio1-req.0"), ctx)
    assert managed["action"] == "boot" and managed["boot"] == ["isolcpus=managed_irq,domain,1"]
    assert "no IRQ named" in rules.irq_source(src("irq", "eth9-rx"), ctx)["why"]


def test_softirqs(ctx, knob_files):
    timer = rules.softirq_source(src("softirq", "TIMER"), ctx)
    assert knobs_of(timer) == {"kernel.timer_migration": "0"} and timer["knobs"][0]["expect"] == "fewer"
    assert rules.softirq_source(src("softirq", "RCU"), ctx)["boot"] == ["rcu_nocbs=1", "rcu_nocb_poll"]
    assert "isolcpus=managed_irq,domain,1" in rules.softirq_source(src("softirq", "SCHED"), ctx)["boot"]
    assert "isolcpus=managed_irq,domain,1" in rules.softirq_source(src("softirq", "BLOCK"), ctx)["boot"]
    assert knobs_of(rules.softirq_source(src("softirq", "NET_RX"), ctx)) == {"irq.*.affinity": "0"}
    assert rules.softirq_source(src("softirq", "HRTIMER"), ctx)["action"] == "none"


def test_work_functions_and_timers(ctx, knob_files):
    vm = rules.work_source(src("work", "vmstat_update"), ctx)
    assert knobs_of(vm) == {"vm.stat_interval": "10"} and vm["knobs"][0]["factor"] == pytest.approx(0.1)
    assert rules.work_source(src("work", "psi_avgs_work"), ctx)["boot"] == ["psi=0"]
    ctx.origins = {
        "flush_to_ldisc": {"kworker/u8:1"},
        "neigh_managed_work": {"kworker/1:0"},
        "mixed_fn": {"kworker/u8:1", "kworker/1:2"},
    }
    assert knobs_of(rules.work_source(src("work", "flush_to_ldisc"), ctx)) == {"workqueue.cpumask": "0"}
    pinned = rules.work_source(src("work", "neigh_managed_work"), ctx)
    assert pinned["action"] == "none" and "cannot move" in pinned["why"]
    assert rules.work_source(src("work", "mixed_fn"), ctx)["action"] == "none"  # per-CPU some of the time
    assert knobs_of(rules.timer_source(src("timer", "watchdog_timer_fn"), ctx)) == {"kernel.watchdog_cpumask": "0"}
    assert rules.timer_source(src("timer", "hrtimer_wakeup"), ctx)["action"] == "none"


def test_threads_nmi_and_unexplained(ctx, knob_files):
    assert knobs_of(rules_threads.thread_source(src("thread", "khugepaged"), ctx)) == {"mm.thp.enabled": "never"}
    assert knobs_of(rules_threads.thread_source(src("thread", "ksmd"), ctx)) == {"mm.ksm.run": "0"}
    assert knobs_of(rules_threads.thread_source(src("thread", "kcompactd0"), ctx)) == {
        "vm.compaction_proactiveness": "0"
    }
    for bound in ("ksoftirqd/1", "migration/1", "rcuc/1", "kworker/1:2", "cpuhp/1"):
        assert rules_threads.thread_source(src("thread", bound), ctx)["action"] == "none", bound
    assert knobs_of(rules_threads.thread_source(src("thread", "kworker/u8:3"), ctx)) == {"workqueue.cpumask": "0"}
    for own in ("python (jitterscope)", "js-probe/1", "jitterscope-pro"):
        assert rules_threads.thread_source(src("thread", own), ctx)["action"] == "self"
    for other in ("js-probe/1 (another jitterscope)", "jitterscope (another jitterscope)"):
        r = rules_threads.thread_source(src("thread", other), ctx)
        assert r["action"] == "none" and "another jitterscope" in r["why"]
    comm = stat_fields(os.getpid())[0]
    ctx.pids = {comm: [os.getpid()], "gone-daemon": [2**22 + 7]}
    assert rules_threads.thread_source(src("thread", comm), ctx)["reason"] == "out of scope"  # not named
    ctx.move = {comm}
    me = rules_threads.thread_source(src("thread", comm), ctx)
    assert knobs_of(me) == {f"task.{os.getpid()}.affinity": "0"} and me["knobs"][0]["process"] == comm
    gone = rules_threads.thread_source(src("thread", "gone-daemon"), ctx)
    assert gone["action"] == "none" and gone["reason"] == "short-lived" and "have ended" in gone["why"]
    assert knobs_of(rules_threads.nmi_source(src("nmi", "perf_event_nmi_handler"), ctx)) == {"kernel.nmi_watchdog": "0"}
    vm = rules_threads.unexplained_source(src("unexplained", "unexplained"), ctx)
    assert vm["action"] == "host" and "guest cannot fix" in vm["why"]
    ctx.virtualization = None
    assert "SMI" in rules_threads.unexplained_source(src("unexplained", "unexplained"), ctx)["why"]


def test_plan_of_a_synthetic_run(tmp_path, knob_files, monkeypatch):
    monkeypatch.setattr(irq, "irqs", lambda: [irq.Irq(40, ["virtio0-input.0"], [0, 1], [1], True)])
    run = build_run(tmp_path / "run", seed=3, duration_s=3.0)
    loaded = load_run(run)
    labels = {(s["kind"], s["name"]) for s in sources(loaded)}
    assert ("work", "vmstat_update") in labels and ("irq", "local_timer") in labels
    assert ("thread", "kworker/1:1") not in labels  # its time is its work function's now
    assert refine(loaded).attribution.num_rows == loaded.attribution.num_rows
    p = make_plan(run)
    by = {i["source"]: i for i in p["items"]}
    assert "nohz_full=1" in by["irq:local_timer"]["boot"]
    assert knobs_of(by["work:vmstat_update"]) == {"vm.stat_interval": "10"}
    assert knobs_of(by["irq:virtio0-input.0"]) == {"irq.40.affinity": "0"}
    assert knobs_of(by["softirq:NET_RX"]) == {"irq.*.affinity": "0"}
    assert by["unexplained:unexplained"]["action"] == "host"
    assert [i["removable_ppm"] for i in p["items"]] == sorted((i["removable_ppm"] for i in p["items"]), reverse=True)
    assert p["boot"]["cmdline"].startswith("nohz_full=1")
    assert {k["knob"] for k in p["knobs"]} >= {"vm.stat_interval", "irq.40.affinity"}
    out = planfile.write(p, tmp_path / "plan.yaml")
    back = planfile.load(out)
    assert [k.knob for k in back.knobs] == [k["knob"] for k in p["knobs"]]
    assert back.cpus == [1] and back.host == "testhost"


def test_bad_plans_are_one_line(tmp_path):
    bad = tmp_path / "plan.yaml"
    bad.write_text(
        "format: jitterscope-tune-plan\nversion: 1\nhost: h\nkernel: k\ncpus: [1]\nhousekeeping: [0]\n"
        "knobs:\n  - {knob: vm.stat_interval, valu: 10}\n"
    )
    with pytest.raises(JitterscopeError, match=r"plan.yaml: knobs\[0\]: unknown key 'valu'"):
        planfile.load(bad)
    untraced = build_run(tmp_path / "untraced", tracing=False)
    with pytest.raises(JitterscopeError, match="without kernel tracing"):
        make_plan(untraced)
