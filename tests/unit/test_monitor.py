"""monitor pieces on synthetic runs: history bounds, metrics text, detection, failed windows."""

from __future__ import annotations

import io
import re
from pathlib import Path

from jitterscope.monitor import Monitor, MonitorOptions
from jitterscope.monitor.detect import Detector
from jitterscope.monitor.history import History
from jitterscope.monitor.metrics import MonitorState, render_metrics, source_rows
from jitterscope.rundir import load_run
from tests.fixtures_runs import Injector, build_run

SAMPLE = re.compile(r"^([a-z_]+)(\{[^}]*\})? (-?[0-9.e+-]+|NaN)$")


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


def test_metrics_are_valid_prometheus_text(tmp_path):
    s = load_run(build_run(tmp_path / "r", cpus=[1, 2], seed=1)).summary
    st = MonitorState(
        windows_total=7,
        failures_total=1,
        lost_events_total=3,
        window_s=1,
        interval_s=10,
        last=s,
        sources=source_rows(s),
    )
    text = render_metrics(st)
    seen = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) [a-z_]+ ", line)
            continue
        m = SAMPLE.match(line)
        assert m, line
        seen.setdefault(m.group(1), []).append((m.group(2), float(m.group(3))))
    assert seen["jitterscope_windows_total"] == [(None, 7.0)]
    assert dict(seen["jitterscope_noise_ppm"]) == {
        '{cpu="1"}': s["cpus"]["1"]["noise_ppm"],
        '{cpu="2"}': s["cpus"]["2"]["noise_ppm"],
    }
    tick = dict(seen["jitterscope_source_noise_ns"])['{kind="irq",name="local_timer"}']
    assert tick == next(x["total_ns"] for x in s["sources"] if x["name"] == "local_timer")
    assert seen["jitterscope_unexplained_share"][0][1] == s["unexplained"]["share"]
    assert "jitterscope_lost_events_total 3" in text


def test_label_values_are_escaped():
    st = MonitorState(
        last={"cpus": {}, "sources": []},
        sources=[{"kind": "thread", "name": 'we"ird\\na\nme', "total_ns": 1, "count": 1}],
    )
    assert 'name="we\\"ird\\\\na\\nme"' in render_metrics(st)


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
