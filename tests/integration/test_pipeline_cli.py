"""`jitterscope pipeline` as a user runs it: compile, run, report, etp -> ptts, bad input, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.integration.conftest import needs_tracing

ROOT = Path(__file__).resolve().parents[2]
APPENDIX = str(ROOT / "examples" / "pipeline" / "appendix.yaml")


def js(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    """The command line run in this process (no interpreter start-up: the machine is shared and slow)."""
    import contextlib
    import io

    from jitterscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    term = signal.getsignal(signal.SIGTERM)  # main() turns SIGTERM into Ctrl-C: not for the test runner
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as e:  # argparse
            code = int(e.code or 0)
        finally:
            signal.signal(signal.SIGTERM, term)
    proc = subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())
    if check and code != 0:
        raise AssertionError(f"jitterscope {' '.join(args)} failed ({code}):\n{proc.stderr}")
    return proc


def one_line_error(proc: subprocess.CompletedProcess, match: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert match in lines[0], lines[0]


def test_compile_explain_prints_the_appendix_schedule(tmp_path):
    gantt = tmp_path / "g.svg"
    p = js(
        "pipeline",
        "compile",
        APPENDIX,
        "--threads",
        "2",
        "--heuristic",
        "fixed",
        "--memory",
        "simple",
        "--explain",
        "--gantt",
        str(gantt),
        check=True,
    )
    assert "thread0: W s1, E f8.0, S s2, W s3, E f6.0" in p.stdout
    assert "786,432 B" in p.stdout and "8 signals (4 WAR, 4 RAW)" in p.stdout
    assert gantt.read_text().startswith("<?xml")
    out = tmp_path / "s.yaml"
    js("pipeline", "compile", APPENDIX, "--threads", "2", "-o", str(out), check=True)
    assert "format: jitterscope-pipeline-schedule" in out.read_text()
    # weights measured here (each box alone): the conv's real cost, not the annotation's 100
    m = js("pipeline", "compile", APPENDIX, "--threads", "2", "--weights", "measured", "--json", check=True)
    sim = json.loads(m.stdout)["simulated"]
    assert sim["f7.0"][1] - sim["f7.0"][0] > 0 and sim["f8.0"][1] > 1000  # in ns now


@pytest.mark.slow
def test_run_report_compare_and_etp_into_ptts(tmp_path):
    sched = tmp_path / "s.yaml"
    js("pipeline", "compile", APPENDIX, "--threads", "2", "--heuristic", "predictable", "-o", str(sched), check=True)
    run = tmp_path / "run"
    p = js(
        "pipeline",
        "run",
        APPENDIX,
        "--schedule",
        str(sched),
        "--iterations",
        "300",
        "--wait",
        "hybrid",
        "--out",
        str(run),
        "--json",
        check=True,
    )
    summary = json.loads(p.stdout)
    assert summary["latency"]["n"] == 300 and summary["latency"]["mean"] > 0
    assert summary["run"]["heuristic"] == "predictable"
    assert (run / "report.html").exists() and (run / "schedule.yaml").exists()
    assert not (run / "raw").exists()
    import pyarrow.parquet as pq

    it = pq.read_table(run / "iterations.parquet")
    lat = it.column("latency_ns").to_numpy()
    assert len(lat) == 300 and (lat > 0).all()
    assert np.array_equal(lat, it.column("end_ns").to_numpy() - it.column("release_ns").to_numpy())
    assert pq.read_table(run / "subboxes.parquet").num_rows == 300 * 6
    # the same graph under another schedule gives the same outputs
    run2 = tmp_path / "run2"
    p2 = js(
        "pipeline",
        "run",
        APPENDIX,
        "--heuristic",
        "simple",
        "--memory",
        "simple",
        "--iterations",
        "300",
        "--out",
        str(run2),
        "--json",
        "--no-report",
        check=True,
    )
    assert json.loads(p2.stdout)["outputs"]["digest"] == summary["outputs"]["digest"]
    c = js("compare", str(run), str(run2), "--json")
    assert c.returncode in (0, 1), c.stderr
    assert json.loads(c.stdout)["kind"] == "pipeline"
    # ETP -> ptts: read back, probabilities summing to one
    csv = tmp_path / "pipe.csv"
    js("pipeline", "etp", str(run), "-o", str(csv), "--resolution", "10us", check=True)
    model = tmp_path / "chain.yaml"
    model.write_text(
        "resolution: 10us\ncomponents:\n"
        "  - {name: pipeline, period: 40ms, offset: 0ms, etp: {csv: pipe.csv}}\n"
        "  - {name: display, period: 16.6ms, offset: 0ms, etp: {pmf: {5ms: 1.0}}}\n"
    )
    r = js("ptts", str(model), "--json", check=True)
    res = json.loads(r.stdout)
    pmf = res["latency"]["pmf"] if "latency" in res else res["pmf"]
    assert abs(sum(p for _, p in pmf) - 1.0) < 1e-9
    # the profile read back is the run's: its mean within one tick of the measured mean
    rows = [ln.split(",") for ln in csv.read_text().splitlines() if ln and ln[0].isdigit()]
    mean_us = sum(float(t[:-2]) * float(p) for t, p in rows)
    assert abs(mean_us - summary["latency"]["mean"] / 1e3) <= 10.0
    f = js("fit", str(run), "--json", "--replicates", "19")
    assert f.returncode == 0, f.stderr


def _bad_graph(tmp: Path, text: str) -> str:
    f = tmp / "bad.yaml"
    f.write_text(text)
    return str(f)


def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch):
    base = "image: {width: 8, height: 8}\nboxes:\n  s: {kernel: source}\n  g: {kernel: gain}\n  k: {kernel: sink}\n"
    cyclic = _bad_graph(
        tmp_path,
        base.replace("  k:", "  a: {kernel: add}\n  d: {kernel: dup}\n  k:")
        + "edges: [s -> a.in0, g -> a.in1, a -> d, d.out0 -> g, d.out1 -> k]\n",
    )
    one_line_error(js("pipeline", "compile", cyclic), "cycle")
    unknown = _bad_graph(tmp_path, base.replace("gain", "sharpen") + "edges: [s -> g, g -> k]\n")
    one_line_error(js("pipeline", "compile", unknown), "unknown kernel 'sharpen'")
    foot = _bad_graph(
        tmp_path,
        base.replace("{kernel: gain}", "{kernel: conv, size: 5, inputs: [{name: in, neighbourhood: [3, 3]}]}")
        + "edges: [s -> g, g -> k]\n",
    )
    one_line_error(js("pipeline", "compile", foot), "does not match")
    other = tmp_path / "other.yaml"
    js("pipeline", "compile", APPENDIX, "-o", str(other), check=True)
    good = _bad_graph(tmp_path, base + "edges: [s -> g, g -> k]\n")
    one_line_error(js("pipeline", "run", good, "--schedule", str(other)), "compiled for another graph")
    one_line_error(js("pipeline", "compile", APPENDIX, "--threads", "0"), "--threads")
    one_line_error(js("pipeline", "run", APPENDIX, "--cpus", "0-4095"), "")
    one_line_error(js("pipeline", "etp", str(tmp_path), "-o", str(tmp_path / "x.csv")), "")
    one_line_error(js("pipeline", "run", APPENDIX, "--period", "-1ms"), "--period")
    one_line_error(js("pipeline", "bench"), "GRAPH or --synthetic")
    monkeypatch.chdir(tmp_path)  # no jitterscope-runs here: the default bench directory is made, not refused
    one_line_error(js("pipeline", "bench", APPENDIX, "--heuristics", "foo"), "--heuristics")


def test_more_threads_than_cpus_runs_with_a_warning(tmp_path):
    from jitterscope.sysinfo import online_cpus

    n = len(online_cpus()) + 1
    p = js(
        "pipeline",
        "run",
        APPENDIX,
        "--threads",
        str(n),
        "--heuristic",
        "fixed",
        "--iterations",
        "20",
        "--out",
        str(tmp_path / "r"),
        "--no-report",
    )
    assert p.returncode == 0, p.stderr
    assert f"{n} threads on {n - 1} CPUs" in p.stderr
    assert "futex waits" in p.stdout


@pytest.mark.slow
def test_barrier_never_starts_an_iteration_before_the_previous_ended(tmp_path):
    import pyarrow.parquet as pq

    js(
        "pipeline",
        "run",
        APPENDIX,
        "--heuristic",
        "barrier",
        "--iterations",
        "200",
        "--out",
        str(tmp_path / "b"),
        "--no-report",
        check=True,
    )
    it = pq.read_table(tmp_path / "b" / "iterations.parquet")
    start, end = it.column("start_ns").to_numpy(), it.column("end_ns").to_numpy()
    assert (start[1:] >= end[:-1]).all()


def _start_long_run(out: Path, *extra: str, **popen: Any) -> subprocess.Popen:
    """A pipeline run of a million iterations, returned once its runtime iterates (a heartbeat, then 1 s)."""
    cmd = [sys.executable, "-m", "jitterscope", "pipeline", "run", APPENDIX, "--iterations", "1000000"]
    p = subprocess.Popen([*cmd, "--wait", "futex", "--no-timers", "--out", str(out), *extra], **popen)
    deadline = time.monotonic() + 60
    while not (out / "raw" / "heartbeat.bin").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    return p


def test_ctrl_c_ends_after_the_started_iterations_and_keeps_the_run(tmp_path):
    out = tmp_path / "r"
    p = _start_long_run(out, "--no-report", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 0, stderr
    assert "(interrupted)" in stdout
    meta = json.loads((out / "meta.json").read_text())
    assert meta["interrupted"] and 0 < meta["iterations"] < 1_000_000
    assert not (out / "raw").exists()


@needs_tracing
@pytest.mark.slow
def test_trace_attributes_late_iterations(tmp_path):
    p = js(
        "pipeline",
        "run",
        APPENDIX,
        "--heuristic",
        "fixed",
        "--iterations",
        "200",
        "--trace",
        "--out",
        str(tmp_path / "t"),
        "--json",
        "--no-report",
    )
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    late = s["late"]
    assert late["count"] >= 2 and late["threshold_ns"] >= s["latency"]["p50"]
    import pyarrow.parquet as pq

    att = pq.read_table(tmp_path / "t" / "attribution.parquet")
    # the pipeline's own threads and the idle task are never counted as taking time from it
    assert not any(n.startswith(("js-pipe/", "swapper/")) for n in att.column("name").to_pylist())
    # the trace reader's cost and density, as in a measure run's meta.json (issue 24: for every capture)
    reader = json.loads((tmp_path / "t" / "meta.json").read_text())["tracing"]["reader"]
    assert reader["ended"] == "stop" and reader["events"] > 0 and reader["cpu_s_per_m_events"] >= 0


def test_kill_9_loses_nothing_the_runtime_recorded(tmp_path):
    """The runtime ends with its parent and writes what it ran; `analyze` builds the run from it."""
    from tests.integration.conftest import alive

    out = tmp_path / "r"
    p = _start_long_run(out, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runtime = _runtime_of(p)
    p.kill()
    p.wait()
    deadline = time.monotonic() + 10
    while any(alive(r) for r in runtime) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runtime and not any(alive(r) for r in runtime)
    a = js("analyze", str(out), "--json", check=True)
    s = json.loads(a.stdout)
    assert s["run"]["interrupted"] and s["latency"]["n"] > 0
    assert json.loads((out / "meta.json").read_text())["recovered"]


def _runtime_of(p: subprocess.Popen) -> list[int]:
    return [
        int(c.parent.name)
        for c in Path("/proc").glob("[0-9]*/comm")
        if _read(c).startswith("jitterscope-pip") and _ppid(c.parent) == p.pid
    ]


def test_a_runtime_that_dies_fails_the_run_in_one_line(tmp_path):
    """Child supervision (session.py): the runtime killed by someone else is no clean end.  Killed with
    SIGKILL it writes no result, so nothing was recorded: exit 1, one line, no run directory left."""
    out = tmp_path / "r"
    p = _start_long_run(out, "--no-report", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runtime = _runtime_of(p)
    assert runtime, "the runtime was not found among the run's children"
    for r in runtime:
        os.kill(r, signal.SIGKILL)
    _, stderr = p.communicate(timeout=120)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert p.returncode == 1, stderr
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert "pipeline runtime failed" in lines[0] and "nothing was recorded" in lines[0], lines[0]
    assert not out.exists()


def _read(p: Path) -> str:
    try:
        return p.read_text()
    except OSError:
        return ""


def _ppid(proc: Path) -> int:
    stat = _read(proc / "stat")
    return int(stat[stat.rindex(")") + 2 :].split()[1]) if stat else -1
