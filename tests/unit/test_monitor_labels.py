"""The monitor's label cardinality: sources are commands (process ids folded), at most --max-sources
names hold a label at once, and every fold beyond that is counted."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest
from prometheus_client.parser import text_string_to_metric_families

from jitterscope.monitor import Monitor, MonitorOptions
from jitterscope.monitor.labels import OTHER, LabelCap, identity
from jitterscope.monitor.sources import cpu_sources
from jitterscope.rundir import load_run
from tests.fixtures_runs import Injector, build_run


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("worker-48213", "worker-*"),
        ("rank123456", "rank*"),
        ("kworker/1:2", "kworker/1:*"),
        ("kworker/u4:0H-events", "kworker/u4:*H"),
        ("ksoftirqd/1234", "ksoftirqd/1234"),  # a CPU number names a per-CPU kernel thread: a fixed set
        ("irq/24-virtio0", "irq/24-virtio0"),
        ("python3.11", "python3.11"),
        ("cc1plus", "cc1plus"),
    ],
)
def test_a_thread_is_known_by_its_command_not_its_process(name, label):
    assert identity("thread", name) == ("thread", label)


def test_interrupt_names_keep_their_numbers():
    assert identity("irq", "virtio0-input.12345") == ("irq", "virtio0-input.12345")


def test_the_cap_holds_names_that_recur_and_folds_newcomers_until_one_goes_idle():
    cap = LabelCap(cap=2, idle_windows=3)
    a, b, c, d = (("thread", n) for n in "abcd")
    assert cap.assign([a, b, ("unexplained", "unexplained")]) == {
        a: a,
        b: b,
        ("unexplained", "unexplained"): ("unexplained", "unexplained"),  # never folded, never counted
    }
    assert cap.assign([c, a]) == {c: ("thread", OTHER), a: a}  # full: b was seen one window ago
    assert cap.folded_total["thread"] == 1
    for _ in range(3):
        cap.assign([a])
    # b unseen for 4 windows (> idle_windows): c takes its place; d still folds
    assert cap.assign([c, d]) == {c: c, d: ("thread", OTHER)}
    assert cap.folded_total == {"irq": 0, "softirq": 0, "thread": 2, "nmi": 0}
    assert cap.label(b) == ("thread", OTHER) and cap.label(a) == a


def test_a_capped_window_keeps_the_largest_sources_and_all_the_time(tmp_path):
    run = load_run(build_run(tmp_path / "r", cpus=[1], seed=3, injector=Injector(cpu=1, busy_ns=800_000)))
    full = cpu_sources(run, LabelCap(cap=1000))
    capped = cpu_sources(run, LabelCap(cap=2))
    named = {(x.kind, x.name) for x in full if x.kind != "unexplained"}
    kept = {(x.kind, x.name) for x in capped if x.name != OTHER and x.kind != "unexplained"}
    assert len(named) > 4 and len(kept) == 2
    biggest = sorted(named, key=lambda k: -sum(x.total_ns for x in full if (x.kind, x.name) == k))[:2]
    assert kept == set(biggest)
    # folding moves time into (other) of the same kind, it loses none
    att = pq.read_table(tmp_path / "r" / "attribution.parquet")
    assert sum(x.total_ns for x in capped) == sum(x.total_ns for x in full) == sum(att.column("ns").to_pylist())
    for kind in ("irq", "softirq", "thread"):
        assert sum(x.total_ns for x in capped if x.kind == kind) == sum(x.total_ns for x in full if x.kind == kind)


def _samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == name
    }


def _monitor(tmp_path, max_sources: int) -> tuple[Monitor, list]:
    """Four windows; from the second on, a daemon whose name carries a new process id each time."""
    made = []

    def measure(cpus, duration_ns, threshold_ns, out_dir, **kw):
        made.append(out_dir)
        inj = Injector(cpu=1, name=f"rank{40000 + len(made)}", busy_ns=2_000_000) if len(made) > 1 else None
        return build_run(out_dir, cpus=cpus, seed=len(made), duration_s=1.0, injector=inj)

    opts = MonitorOptions(
        cpus=[1], interval_s=0.01, window_s=0.01, history=tmp_path / "h", port=0, stop_after=4, baseline_windows=1
    )
    opts.max_sources = max_sources
    mon = Monitor(opts, measure_fn=measure, log=io.StringIO())
    assert mon.run() == 0
    return mon, made


def test_the_monitor_knows_a_daemon_by_its_command_across_process_ids(tmp_path):
    mon, _ = _monitor(tmp_path, max_sources=50)
    text = mon.metrics_text
    names = {dict(k)["name"] for k in _samples(text, "jitterscope_source_noise_ns")}
    assert "rank*" in names and not any(n.startswith("rank4") for n in names)
    # absent from the baseline window: flagged new under its command
    assert _samples(text, "jitterscope_source_regression") == {
        (("change", "new"), ("kind", "thread"), ("name", "rank*")): 1.0
    }
    assert set(_samples(text, "jitterscope_sources_folded_total").values()) == {0.0}


def test_the_monitor_caps_names_and_counts_every_fold(tmp_path):
    mon, made = _monitor(tmp_path, max_sources=3)
    text = mon.metrics_text
    names = {dict(k)["name"] for k in _samples(text, "jitterscope_source_noise_ns")}
    assert names == {OTHER, "unexplained"} | set(_first_window_top(made[0], 3))
    # the newcomer arrived with every place taken by sources that recur: it is reported as (other)
    assert _samples(text, "jitterscope_source_regression") == {
        (("change", "new"), ("kind", "thread"), ("name", OTHER)): 1.0
    }
    # counted: per window, each named source beyond the three that hold the labels
    held = set(_first_window_top(made[0], 3))
    expected: dict[str, int] = {}
    for d in made:
        att = load_run(d).attribution
        for kind, name in {
            identity(k, n) for k, n in zip(att.column("kind").to_pylist(), att.column("name").to_pylist())
        }:
            if kind != "unexplained" and name not in held:
                expected[kind] = expected.get(kind, 0) + 1
    folded = {dict(k)["kind"]: v for k, v in _samples(text, "jitterscope_sources_folded_total").items()}
    assert folded == {k: float(expected.get(k, 0)) for k in ("irq", "softirq", "thread", "nmi")}
    assert folded["thread"] >= 3  # the daemon, in each of its three windows


def _first_window_top(run_dir, n: int) -> list[str]:
    att = pq.read_table(run_dir / "attribution.parquet")
    t = att.group_by(["kind", "name"]).aggregate([("ns", "sum")]).to_pylist()
    named = [(identity(r["kind"], r["name"]), r["ns_sum"]) for r in t if r["kind"] != "unexplained"]
    return [k[1] for k, _ in sorted(named, key=lambda x: -x[1])[:n]]
