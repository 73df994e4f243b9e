"""export through the CLI, on a real run when tracing works here and on a synthetic one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jitterscope.export import read_loggopsim
from jitterscope.rundir import load_run
from tests.fixtures_runs import build_run

from .conftest import jitterscope, needs_tracing, probed_cpu


def _check_exports(run_dir, tmp_path):
    run = load_run(run_dir)
    jitterscope("export", str(run_dir), "--format", "perfetto", "-o", str(tmp_path / "t.json"), check=True)
    trace = json.loads((tmp_path / "t.json").read_text())
    tracks = {e["tid"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert tracks == set(run.cpus)
    assert sum(e.get("cat") == "detour" for e in trace["traceEvents"]) == run.detours.num_rows
    out = json.loads(
        jitterscope(
            "export", str(run_dir), "--format", "loggopsim", "-o", str(tmp_path / "n.txt"), "--json", check=True
        ).stdout
    )
    d = run.detours
    for c, f in zip(run.cpus, out["files"]):
        back = read_loggopsim(f)
        sel = d.column("cpu").to_numpy() == c
        assert np.array_equal(
            back, np.column_stack([d.column("start_ns").to_numpy()[sel], d.column("duration_ns").to_numpy()[sel]])
        )
    jitterscope("export", str(run_dir), "--format", "csv", "-o", str(tmp_path / "d.csv"), check=True)
    assert len((tmp_path / "d.csv").read_text().splitlines()) == d.num_rows + 1


@needs_tracing
def test_exports_of_a_real_run(tmp_path):
    jitterscope(
        "measure",
        "--cpus",
        str(probed_cpu()),
        "--duration",
        "1s",
        "--no-report",
        "--out",
        str(tmp_path / "run"),
        check=True,
    )
    _check_exports(tmp_path / "run", tmp_path)


@pytest.mark.free
def test_exports_of_a_synthetic_two_cpu_run(tmp_path):
    _check_exports(build_run(tmp_path / "run", cpus=[1, 2], seed=51, duration_s=1.0), tmp_path)


@pytest.mark.free
def test_cpu_option_outside_the_run_is_one_line_exit_2(tmp_path):
    run = build_run(tmp_path / "run", cpus=[1], seed=52, duration_s=0.5)
    p = jitterscope("export", str(run), "--format", "loggopsim", "--cpu", "7", "-o", str(tmp_path / "x"))
    assert p.returncode == 2 and "CPU 7 was not measured" in p.stderr and len(p.stderr.splitlines()) == 1
