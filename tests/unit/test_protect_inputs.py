"""protect's input parsing and the summary it builds from records (no root, no native programs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterscope.errors import JitterscopeError
from jitterscope.protect import actuators, build, records, render, replay, signals


@pytest.mark.parametrize(
    "text, read, write",
    [
        ("2GB/s", 2e9, 2e9),
        ("500MiB/s", 500 * 2**20, 500 * 2**20),
        ("read=1GB/s", 1e9, None),
        ("read=1GB/s,write=3MB/s", 1e9, 3e6),
        ("write=1.5e9B/s", None, 1.5e9),
    ],
)
def test_bandwidth_thresholds(text: str, read: float | None, write: float | None):
    t = signals.parse_threshold(text, "report")
    assert (t.read_bps, t.write_bps) == (read, write)


def test_percent_and_time_thresholds():
    assert signals.parse_threshold("25%", "pmu").percent == 0.25
    assert signals.parse_threshold("100us", "slack").ns == 100e3
    assert signals.parse_threshold("10%", "slack").percent == pytest.approx(0.1)
    assert signals.parse_threshold("20%", "noise").percent == pytest.approx(0.2)


@pytest.mark.parametrize(
    "text, signal, msg",
    [
        ("5furlongs", "report", "malformed bandwidth"),
        ("size=1GB/s", "report", "use read=BW and/or write=BW"),
        ("0GB/s", "report", "must be a positive bandwidth"),
        ("2GB/s", "cputime", "takes a percentage"),
        ("-5%", "noise", "must be above 0%"),
        ("lots", "slack", "malformed"),
    ],
)
def test_bad_thresholds(text: str, signal: str, msg: str):
    with pytest.raises(JitterscopeError, match=msg):
        signals.parse_threshold(text, signal)


def test_actuator_names_and_limits():
    assert actuators.parse("freezer:v1") == ("freezer", 1)
    assert actuators.parse("rt") == ("rt", None)
    with pytest.raises(JitterscopeError, match="only freezer and cfs take a cgroup version"):
        actuators.parse("rt:v2")
    with pytest.raises(JitterscopeError, match="unknown actuator"):
        actuators.parse("hammer")


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="the root-only actuators check root first")
def test_cfs_cannot_express_the_thesis_settings_and_says_what_can():
    with pytest.raises(
        JitterscopeError,
        match=r"quota minimum is 1 ms; for the same 10% share use --sample 1ms "
        r"--suspend 9ms",
    ):
        actuators.check("cfs", 100e3, 900e3)
    with pytest.raises(JitterscopeError, match="same 50% share use --sample 1ms --suspend 1ms"):
        actuators.check("cfs", 500e3, 500e3)
    actuators.check("cfs", 1e6, 9e6)
    with pytest.raises(JitterscopeError, match="exceeds the real-time budget"):
        actuators.check("rt", 100e3, 10e6)


def test_rt_budget_stays_below_the_kernels_limit():
    runtime = int(Path("/proc/sys/kernel/sched_rt_runtime_us").read_text())
    period = int(Path("/proc/sys/kernel/sched_rt_period_us").read_text())
    limit = 1.0 if runtime < 0 else runtime / period
    assert actuators.rt_budget() <= min(limit, 0.95) - 0.03 + 1e-12
    assert actuators.rt_budget() >= 0.9 - 1e-9 or limit < 0.93  # 100/900 must fit under the default 950000


@pytest.mark.parametrize(
    "text, msg",
    [
        ("t,read_bytes,write_bytes\n0,0,0\n1,1,1\n", ":1: header must be t_ns|t_us|t_s"),
        ("t_us,read_bytes,write_bytes\n0,0,0\n0,1,1\n", ":3: times must increase"),
        ("t_us,read_bytes,write_bytes\n0,5,0\n1,4,1\n", ":3: counters are cumulative"),
        ("t_us,read_bytes,write_bytes\n0,0,0\n1,x,1\n", ":3: read_bytes must be a whole number"),
        ("t_us,read_bytes,write_bytes\n0,0,0\n", "needs at least two rows"),
        ("t_us,read_bytes,write_bytes\n0,0\n", ":2: expected 3 fields"),
    ],
)
def test_bad_replay_files(tmp_path: Path, text: str, msg: str):
    f = tmp_path / "r.csv"
    f.write_text(text)
    with pytest.raises(JitterscopeError, match=msg):
        replay.read_csv(f)


def test_replay_units(tmp_path: Path):
    f = tmp_path / "r.csv"
    f.write_text("t_s,read_bytes,write_bytes\n0,0,0\n2,10,20\n")
    assert replay.read_csv(f)["t_ns"].tolist() == [0, 2_000_000_000]


def _samples(n: int, window: int, progress: int, on: bool) -> np.ndarray:
    s = np.zeros(n, dtype=records.SAMPLE_DTYPE)
    s["kind"], s["cpu"], s["window_ns"] = records.KIND_SAMPLE, 1, window
    s["t_ns"] = np.arange(1, n + 1) * window
    s["progress_bytes"], s["cpu_ns"] = progress, window
    s["flags"] = records.S_ON if on else 0
    return s


def test_phases_and_progress_ratio_from_records():
    # an unprotected phase then a protected one, 1 s each, 1 GB/s then 0.1 GB/s of progress
    off = _samples(10_000, 100_000, 100_000, False)
    on = _samples(1_000, 100_000, 100_000, True)
    on["t_ns"] += 1_000_000_000 + np.arange(1000) * 900_000
    x = np.zeros(1000, dtype=records.SUSPENSION_DTYPE)
    x["kind"], x["cpu"], x["t_ns"] = records.KIND_SUSPENSION, 1, on["t_ns"]
    x["end_ns"] = x["t_ns"] + 900_000
    beats = np.zeros(4, dtype=records.BEAT_DTYPE)
    beats["t_ns"] = [0.5e9, 0.6e9, 1.5e9, 1.6e9]
    beats["latency_ns"] = [300, 500, 100, 100]
    recs = {"samples": np.concatenate([off, on]), "suspensions": x, "beats": beats}
    meta = {
        "id": "t",
        "duration_s": 2.0,
        "interrupted": False,
        "cpus": [1],
        "options": {
            "compare_ns": 1e9,
            "signal": "report",
            "actuator": "rt",
            "law": "fixed",
            "sample_ns": 100e3,
            "suspend_ns": 900e3,
            "deadline_ns": 400,
        },
    }
    header = {"complete": True, "records_in_file": 12_004, "dropped": 0, "beats_lost": 0}
    s = build.summarize(recs, header, meta)
    assert s["phases"]["unprotected"]["best_effort"]["progress_bytes_per_s"] == pytest.approx(1e9)
    assert s["phases"]["protected"]["best_effort"]["progress_bytes_per_s"] == pytest.approx(1e8)
    assert s["progress_ratio"] == pytest.approx(0.1)
    assert s["phases"]["protected"]["best_effort"]["duty"] == pytest.approx(0.1)
    assert s["phases"]["unprotected"]["critical"]["mean_ns"] == 400
    assert s["phases"]["unprotected"]["critical"]["deadline_misses"] == 1
    assert s["phases"]["protected"]["critical"]["max_ns"] == 100
    assert s["cpus"]["1"]["suspensions"] == 1000
    assert s["expected_share"] == pytest.approx(0.1)


def _records(samples: np.ndarray) -> dict[str, np.ndarray]:
    """A run's records: these samples, no suspension, no heartbeat."""
    return {
        "samples": samples,
        "suspensions": np.zeros(0, dtype=records.SUSPENSION_DTYPE),
        "beats": np.zeros(0, dtype=records.BEAT_DTYPE),
    }


def _options(actuator: str, sampling: str) -> dict[str, object]:
    """meta.json's options of a CPU-time run under the fixed law, 1 ms / 1 ms, threshold 50%."""
    return {
        "signal": "cputime",
        "actuator": actuator,
        "law": "fixed",
        "sample_ns": 1e6,
        "suspend_ns": 1e6,
        "sampling": sampling,
        "threshold": {"text": "50%"},
        "signal_reason": "requested",
    }


def test_event_sampling_share_and_a_critical_program_without_heartbeats():
    """Event-based on CPU time: the share under excess is budget/(budget+S); on LLC lines it depends on
    the rate (None).  A critical program that publishes nothing is named, never silently absent."""
    recs = _records(_samples(10, 100_000, 0, True))
    opts = _options(actuator="rt", sampling="event")
    meta = {
        "id": "t",
        "duration_s": 1.0,
        "interrupted": False,
        "cpus": [1],
        "critical_cpus": [0],
        "options": opts,
        "programs": [{"role": "critical", "name": "sleep"}],
        "controller": {"event_budget": [500_000, 0]},
    }
    header = {"complete": True, "records_in_file": 10, "dropped": 0, "beats_lost": 0}
    s = build.summarize(recs, header, meta)
    assert s["event_budget"] == {"unit": "ns of CPU time", "cpu_ns": 500_000}
    assert s["expected_share"] == pytest.approx(1 / 3)
    assert s["critical"] is None and s["critical_latency"].startswith("unknown: the critical program published no")
    assert "critical latency unknown" in render.render(s, meta, "r")
    pmu = build.summarize(
        recs, header, dict(meta, options=dict(opts, signal="pmu"), controller={"event_budget": [100, 0]})
    )
    assert pmu["event_budget"] == {"unit": "LLC lines", "read": 100, "write": None}
    assert pmu["expected_share"] is None


@pytest.mark.parametrize("law", [None, "fixed", "proportional"])
@pytest.mark.parametrize("content, msg", [(None, "no such calibration file"), ("{}", "format"), ("[1", "calibration")])
def test_a_calibration_file_named_must_be_usable_under_every_law(tmp_path: Path, law, content, msg):
    """--calibration missing, unreadable or not a calibration is an error, not ignored because the law needs none."""
    from jitterscope.protect import plan

    f = tmp_path / "cal.json"
    if content is not None:
        f.write_text(content)
    a = {"critical_cmd": "true", "best_effort_cmd": "true", "calibration": str(f), "law": law}
    with pytest.raises(JitterscopeError, match=msg):
        plan.build(a)


def test_a_run_killed_before_any_sample_renders_without_rows():
    """Killed at start-up (the kill table's protect row), a run has phases but nothing in them: its summary is
    the header alone (it once raised TypeError from max() over no rows)."""
    recs = _records(np.zeros(0, dtype=records.SAMPLE_DTYPE))
    opts = _options(actuator="sigstop", sampling="timer")
    meta = {"id": "t", "duration_s": 0.0, "interrupted": True, "cpus": [1], "critical_cpus": [0], "options": opts}
    s = build.summarize(recs, {"complete": False, "records_in_file": 0, "dropped": 0, "beats_lost": 0}, meta)
    text = render.render(s, meta, "r")
    assert text.startswith("protect: best-effort CPU 1") and "(interrupted)" in text
