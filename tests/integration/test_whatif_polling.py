"""whatif dvfs on a program whose truth it prints (sync_programs/pollwork.c): a worker computing a known CPU time
while a hog takes its CPU, and a main thread polling with timed condvar waits, as xz's progress loop does.

The ideal replay removes every jitter: it must last what the worker computed, not the recorded run (the timed-out
waits were once replayed as compute, and the ideal was the whole run)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import jitterscope, needs_tracing, sync_program

WORK_MS = 250
MAX_FACTOR = 1.2  # the default table's top


def _cpu() -> int:
    from jitterscope.sysinfo import online_cpus

    return online_cpus()[-1]


@pytest.fixture(scope="module")
def pollwork(tmp_path_factory) -> str:
    return sync_program(tmp_path_factory, "pollwork")


def _record(pollwork: str, out: Path, *opts: str) -> dict:
    """The program under sync with a busy loop on its worker's CPU; the program's own truth."""
    hog = subprocess.Popen(["taskset", "-c", str(_cpu()), "sh", "-c", "while :; do :; done"])
    try:
        p = jitterscope(
            "sync", "--no-report", "--out", str(out), *opts, "--", pollwork, str(_cpu()), str(WORK_MS), "10"
        )
    finally:
        hog.kill()
        hog.wait()
    assert p.returncode == 0, p.stderr
    return json.loads(next(ln for ln in p.stdout.splitlines() if ln.startswith('{"worker_cpu_ns"')))


def _dvfs(run: Path) -> dict:
    p = jitterscope("whatif", "dvfs", str(run), "--warmup", "0", "--reactivity", "1", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@needs_tracing
def test_ideal_is_the_work_and_removed_is_what_a_faster_clock_can_win(pollwork, tmp_path):
    truth = _record(pollwork, tmp_path / "run")
    r = _dvfs(tmp_path / "run")
    work = truth["worker_cpu_ns"]
    assert truth["timeouts"] >= 5 and r["polled_waits"] >= truth["timeouts"], (truth, r["polled_waits"])
    assert r["replayed_ns"] == pytest.approx(r["recorded_ns"], rel=0.01)  # the replay stays exact
    # the ideal run is the worker's own CPU time: start-up, page faults and the tail are the 10% allowed; it
    # cannot be shorter, whatever the trace saw
    assert r["ideal_ns"] >= work * 0.97, (truth, r["ideal_ns"])
    if r["missed_switches"] == 0:
        assert r["ideal_ns"] <= work * 1.10, (truth, r["ideal_ns"])
    else:  # a loaded host: the trace lost switches (and the off-CPU time after them), and the output says so
        p = jitterscope("whatif", "dvfs", str(tmp_path / "run"), "--warmup", "0", "--reactivity", "1")
        assert "missed" in p.stdout and "context switches" in p.stdout
        assert r["ideal_ns"] <= 0.75 * r["replayed_ns"], (truth, r)  # polling is not compute: far below the run
    # a 1.2x clock wins back at most work/6 of a slowdown that the hog made far larger
    slow = r["replayed_ns"] - r["ideal_ns"]
    assert slow > 0.3 * work, (truth, r)  # the hog took the CPU: the claim below means something
    bound = (r["ideal_ns"] * (1 - 1 / MAX_FACTOR)) / slow
    assert r["by_k"][0]["removed"] <= bound + 0.01, (r["by_k"][0], bound)
    assert r["non_sync_seen"] is True


def test_without_a_trace_the_result_says_non_sync_jitter_is_unseen(pollwork, tmp_path):
    _record(pollwork, tmp_path / "run", "--no-trace")
    r = _dvfs(tmp_path / "run")
    assert r["non_sync_seen"] is False
    p = jitterscope("whatif", "dvfs", str(tmp_path / "run"), "--warmup", "0", "--reactivity", "1")
    assert "no kernel trace" in p.stdout and "replayed as compute" in p.stdout
