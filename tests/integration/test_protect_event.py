"""Event-based sampling (`--sampling event`, the thesis's future work): each best-effort CPU's control
thread sleeps until a perf counter overflows at the budget (threshold x Ts) instead of waking every Ts.
This VM has no PMU, so the software stand-in runs: the best-effort tasks' task-clock, overflowing at
the CPU-time budget.  The same code path serves LLC lines where a PMU exists."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from jitterscope.cli import main
from jitterscope.native_bin import native_bin
from jitterscope.protect import records
from jitterscope.sysinfo import online_cpus

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the rt blocker needs root"),
    pytest.mark.skipif(len(online_cpus()) < 2, reason="needs two CPUs (critical and best-effort)"),
]
Cap = pytest.CaptureFixture[str]
TS, BUDGET, S = 2_000_000, 600_000, 1_500_000  # --sample 2ms --threshold 30% --suspend 1500us


def _protect(capsys: Cap, out: Path, be_cmd: str, duration: str = "1.5s") -> dict:
    code = main(
        [
            "protect",
            "--best-effort-cmd",
            be_cmd,
            "--signal",
            "cputime",
            "--sampling",
            "event",
            "--sample",
            "2ms",
            "--threshold",
            "30%",
            "--suspend",
            "1500us",
            "--duration",
            duration,
            "--out",
            str(out),
            "--json",
        ]
    )
    got = capsys.readouterr()
    assert code == 0, got.err
    return json.loads(got.out)


def test_the_controller_suspends_when_the_budget_overflows(capsys: Cap, tmp_path: Path):
    # Syn 'C' at nice -19 in its own autogroup: it uses its CPU whenever it is not suspended
    syn = f"sh -c 'echo -19 > /proc/self/autogroup; exec nice -n -19 {native_bin('jitterscope-synload')}'"
    s = _protect(capsys, tmp_path / "r", syn)
    assert s["sampling"] == "event" and s["event_budget"] == {"unit": "ns of CPU time", "cpu_ns": BUDGET}
    t = pq.read_table(tmp_path / "r" / "samples.parquet").to_pydict()
    flags, cpu, window = np.array(t["flags"]), np.array(t["cpu_ns"]), np.array(t["window_ns"])
    suspend = np.array(t["suspend_ns"])
    assert len(flags) > 20 and (flags & records.S_EVENT).all()  # every sample was an overflow
    # woken at the budget: each window holds one budget of best-effort CPU time (plus the wake-up)
    assert np.percentile(cpu, 5) >= BUDGET and np.median(cpu) < 1.25 * BUDGET
    # the budget arithmetic: samples = the CPU time the best-effort program got / the budget
    assert 1.0 <= cpu.sum() / BUDGET / len(cpu) < 1.25
    # over budget exactly when it was spent within Ts, and each such window is one suspension of S
    assert ((suspend > 0) == (window <= TS)).all() and set(suspend[suspend > 0]) == {S}
    x = pq.read_table(tmp_path / "r" / "suspensions.parquet").to_pydict()
    assert len(x["t_ns"]) == int((suspend > 0).sum()) >= 20
    # a share of at most budget/(budget+S) = 0.29, not the timer law's Ts/(Ts+S) = 0.57
    assert s["phases"]["protected"]["best_effort"]["cpu_share"] < 0.33


def test_an_idle_best_effort_program_wakes_nothing(capsys: Cap, tmp_path: Path):
    s = _protect(capsys, tmp_path / "r", "sleep 30", "1s")
    cpu = next(iter(s["cpus"].values()))
    assert cpu["samples"] == 0 and cpu["suspensions"] == 0  # a timer would have sampled 500 times


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--sampling", "event", "--signal", "report"], "--sampling event needs a counter that overflows"),
        (["--sampling", "often"], "unknown sampling 'often'"),
        (
            ["--sampling", "event", "--signal", "cputime", "--sample", "10us", "--threshold", "50%"],
            "below the kernel's 10 us",
        ),
    ],
)
def test_bad_event_sampling_input(capsys: Cap, tmp_path: Path, args: list[str], msg: str):
    code = main(["protect", "--best-effort-cmd", "true", *args, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r").exists()


def test_the_native_controller_refuses_event_sampling_without_a_counter(tmp_path: Path):
    proc = subprocess.run(
        [
            str(native_bin("jitterscope-protect")),
            "--out",
            str(tmp_path / "x"),
            "--sample-ns",
            "1000000",
            "--suspend-ns",
            "1000000",
            "--signal",
            "always",
            "--sampling",
            "event",
            "--actuator",
            "none",
            "--unit",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "needs a counter that overflows" in proc.stderr
