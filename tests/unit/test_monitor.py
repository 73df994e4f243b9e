"""monitor pieces on synthetic runs: history bounds, metrics text, detection, failed windows."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from prometheus_client.parser import text_string_to_metric_families

from jitterscope.monitor import Monitor, MonitorOptions
from jitterscope.monitor.detect import Detector
from jitterscope.monitor.history import History
from jitterscope.monitor.labels import LabelCap
from jitterscope.monitor.metrics import LastWindow, MonitorState, render_metrics
from jitterscope.monitor.sources import CpuSource, cpu_sources
from jitterscope.rundir import load_run
from tests.fixtures_runs import Injector, build_run


def test_history_keeps_count_and_size_bounds(tmp_path):
    h = History(tmp_path / "h", max_windows=3, max_bytes=10**9)
    made = []
    for i in range(5):
        d = h.next_dir()
        build_run(d, seed=i, duration_s=0.5)
        made.append(d)
        h.prune()
    assert h.windows() == made[-3:]
    size_one = History.size(made[-1])
    h2 = History(tmp_path / "h", max_windows=10, max_bytes=int(size_one * 1.5))  # reopening prunes too
    assert h2.windows() == made[-1:] and h2.seq == 5
    assert h2.next_dir().name.startswith("w00000006-")


def _exposition(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Samples by name, then by sorted labels, as prometheus_client's parser reads the text."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            out.setdefault(smp.name, {})[tuple(sorted(smp.labels.items()))] = smp.value
    return out


def test_metrics_are_valid_prometheus_text(tmp_path):
    run = load_run(build_run(tmp_path / "r", cpus=[1, 2], seed=1, injector=Injector(cpu=1)))
    s = run.summary
    st = MonitorState(
        windows_total=7,
        failures_total=1,
        lost_events_total=3,
        window_s=1,
        interval_s=10,
        last=LastWindow.of(run),
        sources=cpu_sources(run, LabelCap()),
    )
    seen = _exposition(render_metrics(st))
    assert seen["jitterscope_windows_total"] == {(): 7.0}
    assert seen["jitterscope_lost_events_total"] == {(): 3.0}
    assert seen["jitterscope_noise_ppm"] == {
        (("cpu", "1"),): s["cpus"]["1"]["noise_ppm"],
        (("cpu", "2"),): s["cpus"]["2"]["noise_ppm"],
    }
    assert seen["jitterscope_unexplained_share"] == {(): s["unexplained"]["share"]}
    # Per CPU and source, against the attribution table grouped independently with Arrow.
    att = pq.read_table(tmp_path / "r" / "attribution.parquet")
    per_detour = att.group_by(["cpu", "kind", "name", "detour"]).aggregate([("ns", "sum")])
    grouped = per_detour.group_by(["cpu", "kind", "name"]).aggregate(
        [("ns_sum", "sum"), ("ns_sum", "max"), ("detour", "count")]
    )
    dur_s = run.duration_ns / 1e9
    runs = _runs_inside_detours(tmp_path / "r")
    assert grouped.num_rows == len(seen["jitterscope_source_noise_ns"]) > 10
    for row in grouped.to_pylist():
        name = re.sub(r"^kworker/(\d+):\d+$", r"kworker/\1:*", row["name"])  # worker ids fold (compare's identity)
        key = (("cpu", str(row["cpu"])), ("kind", row["kind"]), ("name", name))
        assert seen["jitterscope_source_noise_ns"][key] == row["ns_sum_sum"]
        assert seen["jitterscope_source_max_ns"][key] == row["ns_sum_max"]
        assert seen["jitterscope_source_detours"][key] == row["detour_count"]
        assert seen["jitterscope_source_share"][key] == pytest.approx(row["ns_sum_sum"] / (dur_s * 1e9), rel=1e-12)
        ran = runs.get((row["cpu"], row["kind"], name), row["detour_count"])  # unexplained: no activity, its detours
        assert seen["jitterscope_source_rate_hz"][key] == pytest.approx(ran / dur_s, rel=1e-12)
    assert runs[(1, "thread", "jitterscope-inj")] > 50
    inj = (("cpu", "1"), ("kind", "thread"), ("name", "jitterscope-inj"))
    assert seen["jitterscope_source_period_seconds"][inj] == pytest.approx(0.05, rel=1e-3)
    # irregular sources (network interrupts at Poisson times) have no period series
    assert (("cpu", "1"), ("kind", "irq"), ("name", "virtio0-input.0")) not in seen["jitterscope_source_period_seconds"]
    assert seen["jitterscope_sources_folded_total"] == {
        (("kind", k),): 0.0 for k in ("irq", "nmi", "softirq", "thread")
    }


def _runs_inside_detours(run_dir: Path) -> dict[tuple[int, str, str], int]:
    """Activity intervals (the times a source ran) that overlap a detour on their CPU, row by row."""
    det = pq.read_table(run_dir / "detours.parquet").to_pylist()
    out: dict[tuple[int, str, str], int] = {}
    for a in pq.read_table(run_dir / "activity.parquet").to_pylist():
        if a["kind"] in ("work", "timer"):
            continue  # annotations: they own no time
        if any(
            d["cpu"] == a["cpu"] and d["start_ns"] < a["end_ns"] and a["start_ns"] < d["start_ns"] + d["duration_ns"]
            for d in det
        ):
            key = (a["cpu"], a["kind"], re.sub(r"^kworker/(\d+):\d+$", r"kworker/\1:*", a["name"]))
            out[key] = out.get(key, 0) + 1
    return out


def test_label_values_are_escaped():
    weird = CpuSource(
        cpu=1,
        kind="thread",
        name='we"ird\\na\nme',
        detours=1,
        runs=1,
        total_ns=1,
        max_ns=1,
        period_s=None,
        duration_s=1,
    )
    st = MonitorState(last=LastWindow({}, 0, 0.0), sources=[weird])
    text = render_metrics(st)
    assert 'name="we\\"ird\\\\na\\nme"' in text
    assert next(iter(_exposition(text)["jitterscope_source_noise_ns"]))[2] == ("name", weird.name)


def test_detector_reports_a_new_source_once_and_its_recovery(tmp_path):
    det = Detector([1], baseline_windows=2)
    lines = []
    for i, inj in enumerate([None, None, Injector(cpu=1), Injector(cpu=1), None]):
        run = load_run(build_run(tmp_path / f"w{i}", cpus=[1], seed=30 + i, injector=inj))
        lines.append(det.feed(run))
    assert lines[0] == [] and lines[1][0].startswith("baseline ready")
    assert any(x.startswith("NEW SOURCE thread:jitterscope-inj") for x in lines[2])
    assert not any("jitterscope-inj" in x for x in lines[3])  # still there: not repeated
    assert "RECOVERED thread:jitterscope-inj" in lines[4]


def test_a_failed_window_is_logged_and_the_monitor_goes_on(tmp_path):
    calls = []

    def measure(cpus, duration_ns, threshold_ns, out_dir, **kw):
        calls.append(out_dir)
        if len(calls) == 2:
            raise RuntimeError("probe died")
        return build_run(out_dir, cpus=cpus, seed=len(calls), duration_s=0.5)

    log = io.StringIO()
    opts = MonitorOptions(
        cpus=[1],
        interval_s=0.01,
        window_s=0.01,
        history=tmp_path / "h",
        port=0,
        max_windows=2,
        stop_after=4,
        baseline_windows=1,
    )
    mon = Monitor(opts, measure_fn=measure, log=log)
    assert mon.run() == 0
    out = log.getvalue()
    assert "window 2 failed: probe died" in out and "stopped after 3 windows (1 failed)" in out
    assert mon.state.windows_total == 3 and mon.state.failures_total == 1
    assert len(mon.history.windows()) == 2 and not Path(calls[1]).exists()
    assert "jitterscope_window_failures_total 1" in mon.metrics_text
