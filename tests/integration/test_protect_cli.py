"""`jitterscope protect` as a user runs it: bad input, one real run with a critical program, the other
signals, calibrate and the slack law."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from jitterscope.cli import main
from jitterscope.native_bin import native_bin
from jitterscope.rundir import load_run
from jitterscope.sysinfo import online_cpus
from tests.integration.conftest import jitterscope

ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="protect's actuators need root")
TWO = pytest.mark.skipif(len(online_cpus()) < 2, reason="needs two CPUs (critical and best-effort)")
Cap = pytest.CaptureFixture[str]


def _syn(extra: str = "--buffer 262144") -> str:
    # nice -19 in its own autogroup: other work on the shared CPU must not starve the co-runner under test
    return f"sh -c 'echo -19 > /proc/self/autogroup; exec nice -n -19 {native_bin('jitterscope-synload')} {extra}'"


def _chase(extra: str = "") -> str:
    # 200 steps every 2 ms: a few percent of CPU 0, where the test runner lives
    return f"{native_bin('jitterscope-chase')} --period-ns 2000000 --steps 200 {extra}"


def _cli(capsys: Cap, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def _protect(capsys: Cap, *args: str, sub: str | None = None, be: str | None = None) -> tuple[int, str, str]:
    """`jitterscope protect [SUB]` with the pointer chase critical, BE (default Syn 'C') best-effort, then ARGS."""
    head = ("protect", *([sub] if sub else []), "--critical-cmd", _chase(), "--best-effort-cmd", be or _syn())
    return _cli(capsys, *head, *args)


@pytest.fixture
def sleeper():
    p = subprocess.Popen(["sleep", "60"])
    yield p
    p.kill()
    p.wait()


@TWO
@pytest.mark.parametrize(
    "args, msg",
    [
        (["--critical", "999999999", "--best-effort-cmd", "true"], "--critical 999999999: no such process"),
        (["--critical-cmd", "true"], "no best-effort program"),
        (["--critical-cmd", "true", "--best-effort-cmd", "true", "--signal", "psychic"], "unknown signal 'psychic'"),
        (["--critical-cmd", "true", "--best-effort-cmd", "true", "--actuator", "hammer"], "unknown actuator 'hammer'"),
        (["--critical-cmd", "true", "--best-effort-cmd", "true", "--law", "vibes"], "unknown law 'vibes'"),
        (["--critical-cmd", "true", "--best-effort-cmd", "true", "--sample", "100"], "needs a unit"),
        (["--critical-cmd", "true", "--best-effort-cmd", "true", "--sample", "0.1ns"], "--sample '0.1ns' is too short"),
        (["--critical-cmd", "true", "--best-effort-cmd", "true", "--compare", "1ms"], "--compare 1 ms is too short"),
        (
            ["--critical-cmd", "true", "--best-effort-cmd", "true", "--cpus", "0", "--critical-cpus", "0"],
            "both best-effort (--cpus) and critical",
        ),
        (["--critical-cmd", "'unclosed", "--best-effort-cmd", "true"], "No closing quotation"),
        (
            ["--critical-cmd", "true", "--best-effort-cmd", "true", "--signal", "report", "--threshold", "9 furlongs"],
            "malformed bandwidth",
        ),
        (["--critical-cmd", "true", "--best-effort-cmd", "true", "--law", "slack"], "needs --calibration"),
        (["--critical-cmd", "true", "--best-effort", "abc"], "give process ids"),
        (
            ["calibrate", "--critical-cmd", "true", "--best-effort-cmd", "true", "--duration", "1s", "--warmup", "2s"],
            "--warmup 2s leaves nothing of --duration 1s",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(capsys: Cap, tmp_path: Path, args: list[str], msg: str):
    code, _, err = _cli(capsys, "protect", *args, "--out", str(tmp_path / "r"))
    # one error line; another session's crashed run, undone by this command first, may add its own lines
    lines = [ln for ln in err.splitlines() if "error" in ln or "Traceback" in ln]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("jitterscope: error: ") and msg in lines[0], err
    assert not (tmp_path / "r").exists()


@TWO
def test_the_critical_program_cannot_be_best_effort(capsys: Cap, sleeper: subprocess.Popen, tmp_path: Path):
    code, _, err = _cli(capsys, "protect", "--critical", str(sleeper.pid), "--best-effort", str(sleeper.pid))
    assert code == 2 and "must not overlap" in err


@TWO
@ROOT
def test_absent_hardware_is_named(capsys: Cap, tmp_path: Path):
    from jitterscope.protect.signals import pmu_status

    if pmu_status(online_cpus()[-1])[0]:
        pytest.skip("this host has a PMU")
    code, _, err = _cli(
        capsys,
        "protect",
        "--best-effort-cmd",
        _syn(),
        "--signal",
        "pmu",
        "--duration",
        "1s",
        "--out",
        str(tmp_path / "r"),
    )
    assert code == 2 and "no hardware PMU" in err and not (tmp_path / "r").exists()
    if not Path("/sys/fs/resctrl/info/MB").exists():
        code, _, err = _cli(
            capsys, "protect", "--best-effort-cmd", "true", "--actuator", "mba", "--sample", "1ms", "--suspend", "1ms"
        )
        assert code == 2 and "no resctrl memory bandwidth allocation" in err


@TWO
@ROOT
def test_a_real_run_with_and_without_protection(tmp_path: Path):
    """The critical pointer chase on CPU 0, Syn 'C' beside the controller: the run directory has every
    sample, decision, suspension and iteration, and the summary the costs.  Through the real command line."""
    out = tmp_path / "run"
    proc = jitterscope(
        "protect",
        "--critical-cmd",
        _chase("--deadline-ns 5000000"),
        "--best-effort-cmd",
        _syn(),
        "--duration",
        "1500ms",
        "--compare",
        "250ms",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "unprotected" in proc.stdout and "best-effort progress when protected" in proc.stdout
    run = load_run(out)
    s = run.summary
    assert s["signal"] == "report" and s["actuator"] == "rt" and s["law"] == "fixed"
    assert s["phases"]["protected"]["critical"]["count"] > 100
    assert s["phases"]["unprotected"]["critical"]["count"] > 100
    assert s["phases"]["protected"]["best_effort"]["duty"] < 0.5
    assert 0 < s["progress_ratio"] < 0.5
    assert s["cpus"][str(online_cpus()[-1])]["suspensions"] > 100
    it = run.table("iterations")
    assert it.num_rows == s["critical"]["count"] and set(it.column("protected").to_pylist()) == {True, False}
    x = run.table("suspensions").to_pydict()
    assert all(a >= 800_000 for a in x["actual_ns"])
    assert (out / "raw" / "controller.bin").exists() and (out / "raw" / "critical.log").exists()
    assert run.meta["critical_cpus"] == [c for c in online_cpus() if c != online_cpus()[-1]]


@TWO
@ROOT
@pytest.mark.parametrize(
    "signal, extra",
    [
        ("slack", ["--deadline", "1us"]),  # every iteration misses: always over
        ("cputime", ["--threshold", "5%"]),
    ],
)
def test_other_signals(capsys: Cap, tmp_path: Path, signal: str, extra: list[str]):
    code, out, err = _protect(
        capsys,
        "--signal",
        signal,
        *extra,
        "--duration",
        "1s",
        "--out",
        str(tmp_path / "r"),
        "--json",
    )
    assert code == 0, err
    s = json.loads(out)
    cpu = next(iter(s["cpus"].values()))
    metric = pq.read_table(tmp_path / "r" / "samples.parquet").column("metric").drop_null().to_pylist()
    assert len(metric) > 0.5 * cpu["samples"]
    assert cpu["suspensions"] > 50


@TWO
@ROOT
def test_the_noise_signal_attributes_only_what_runs_beside_it(capsys: Cap, tmp_path: Path):
    """The probe's chase slows for many reasons on a shared machine; only windows in which the best-effort
    tasks ran are held against them, compared with chases timed while none of them ran.  At a 1% threshold
    an idle co-runner is never suspended (the probe ran all along), a busy one is."""
    got = {}
    for name, be in (("idle", "sleep 30"), ("busy", _syn())):
        code, out, err = _protect(
            capsys,
            "--signal",
            "noise",
            "--threshold",
            "1%",
            "--duration",
            "1s",
            "--out",
            str(tmp_path / name),
            "--json",
            be=be,
        )
        assert code == 0, err
        got[name] = next(iter(json.loads(out)["cpus"].values()))["suspensions"]
        metric = pq.read_table(tmp_path / name / "samples.parquet").column("metric").drop_null().to_pylist()
        assert len(metric) > 1000 and min(metric) > 0  # the probe's chase time, ns
    assert got["idle"] == 0 and got["busy"] > 0, got


@TWO
@ROOT
def test_without_root_nothing_changes(tmp_path: Path):
    """No root for a cgroup actuator: one line naming what to use instead, and no run directory."""
    actuator = "freezer"
    from tests.integration.machine import run_as_nobody

    p = run_as_nobody(
        [
            "-m",
            "jitterscope",
            "protect",
            "--critical-cmd",
            "true",
            "--best-effort-cmd",
            "sleep 5",
            "--actuator",
            actuator,
            "--sample",
            "1ms",
            "--out",
            str(tmp_path / "r"),
        ],
        cwd=str(tmp_path),
        env={"HOME": str(tmp_path)},
    )
    lines = [ln for ln in p.stderr.splitlines() if "error" in ln or "Traceback" in ln]
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert f"the {actuator} actuator needs root" in p.stderr and not (tmp_path / "r").exists()


@TWO
@ROOT
def test_a_program_that_publishes_nothing_has_no_stop_latency(capsys: Cap, tmp_path: Path):
    """`sleep` never writes its report page: when it stopped is unknown (null), not 'the page's zero'."""
    code, out, err = _protect(
        capsys,
        "--signal",
        "always",
        "--duration",
        "300ms",
        "--out",
        str(tmp_path / "r"),
        "--json",
        be="sleep 30",
    )
    assert code == 0, err
    x = pq.read_table(tmp_path / "r" / "suspensions.parquet").column("stop_latency_ns")
    assert len(x) > 50 and x.null_count == len(x)


@TWO
@ROOT
@pytest.mark.slow
def test_calibrate_then_the_slack_law(capsys: Cap, tmp_path: Path):
    cal = tmp_path / "cal.json"
    code, out, err = _protect(
        capsys,
        "--shares",
        "1,0.5,0",
        "--duration",
        "500ms",
        "--warmup",
        "50ms",
        "--out",
        str(cal),
        sub="calibrate",
        be=_syn("--buffer 16777216"),
    )
    assert code == 0, err
    assert json.loads(cal.read_text())["warmup_ns"] == 50e6
    points = json.loads(cal.read_text())["points"]
    assert [p["share"] for p in points] == [1.0, 0.5, 0.0]
    assert points[2]["progress_bytes_per_s"] is None  # share 0: no best-effort program at all
    deadline = max(p["p99_ns"] for p in points) * 2  # met everywhere: no suspension needed
    code, out, err = _protect(
        capsys,
        "--law",
        "slack",
        "--calibration",
        str(cal),
        "--deadline",
        f"{deadline:.0f}ns",
        "--duration",
        "500ms",
        "--out",
        str(tmp_path / "r"),
        "--json",
    )
    assert code == 0, err
    s = json.loads(out)
    assert s["law"] == "slack" and s["signal"] == "none"
    code, _, err = _protect(
        capsys,
        "--law",
        "slack",
        "--calibration",
        str(cal),
        "--deadline",
        "1us",
        "--out",
        str(tmp_path / "r2"),
    )
    assert code == 2 and "no duty cycle can meet it" in err and not (tmp_path / "r2").exists()


def test_reduction_prints_table_4_3(capsys: Cap):
    code, out, _ = _cli(capsys, "protect", "reduction", "--thesis", "--json")
    assert code == 0 and json.loads(out)["write"]["4"]["E"] == pytest.approx(89.908, abs=1e-3)
