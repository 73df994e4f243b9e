"""`jitterscope sync` at the ends of threads and processes, on a program whose truth it prints (lifecycle.c):
a crashed program's run lasts until it crashed (not until its last record), a cancelled thread's life and its
cancelled wait are kept, and a join is one object (the thread), not two (its pthread_t and its tid)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.integration.conftest import jitterscope, sync_program

MS = 40
NS = 1_000_000


@pytest.fixture(scope="module")
def exe(tmp_path_factory) -> str:
    return sync_program(tmp_path_factory, "lifecycle")


def _sync(exe: str, tmp_path: Path, mode: str) -> tuple[dict, dict, Path]:
    out = tmp_path / mode
    # the shortest threshold N: a join's wake-up is jitter, so its thread is among the objects however quiet the
    # machine (a semaphore's wake-ups took 1-3 us in a quiet run, under the default 10 us: test_sync_primitives)
    p = jitterscope(
        "sync", "--threshold", "10ns", "--no-trace", "--no-report", "--out", str(out), "--", exe, mode, str(MS)
    )
    assert (out / "summary.json").exists(), p.stderr
    truth = json.loads(next(ln for ln in p.stderr.splitlines() if ln.startswith("{")))
    return truth, json.loads((out / "summary.json").read_text()), out


def _table(run: Path, name: str) -> list[dict]:
    return pq.read_table(run / f"{name}.parquet").to_pylist()


def test_a_crashed_program_runs_until_it_crashed(exe, tmp_path):
    truth, s, _ = _sync(exe, tmp_path, "crash")
    # its last record is ~5 ms in; then it computes MS ms and crashes: the run covers that compute
    assert s["run_ns"] >= truth["after_last_sync_ns"], (s["run_ns"], truth)


def test_a_cancelled_thread_keeps_its_life_and_its_wait(exe, tmp_path):
    truth, s, run = _sync(exe, tmp_path, "cancel")
    main = min(_table(run, "threads"), key=lambda t: t["start_ns"])
    (worker,) = [t for t in _table(run, "threads") if t["tid"] != main["tid"]]
    # cancelled MS ms after the program began: its life ends there, give or take its start-up
    assert worker["end_ns"] - worker["start_ns"] >= (MS - 5) * NS, worker
    assert worker["end_ns"] <= truth["cancel_at_ns"] + 20 * NS, (worker, truth)
    waits = [w for w in _table(run, "waits") if w["tid"] == worker["tid"]]
    assert len(waits) == 1 and waits[0]["op"] == "cond" and waits[0]["releaser_tid"] is None, waits
    assert waits[0]["exit_ns"] - waits[0]["enter_ns"] >= (MS - 5) * NS
    assert s["unmatched"].get("wait_cancelled") == 1


def test_a_join_is_one_object(exe, tmp_path):
    _, s, run = _sync(exe, tmp_path, "join")
    (j,) = [w for w in _table(run, "waits") if w["op"] == "join"]
    child = next(t["tid"] for t in _table(run, "threads") if t["tid"] != j["tid"])
    assert j["obj"] == child and j["releaser_tid"] == child
    assert all(r["obj"] == child for r in _table(run, "jitter") if r["type"] == "jw")
    assert [o["symbol"] for o in s["objects"] if o["kind"] == "thread"] == [f"thread {child}"], s["objects"]


def test_cmd_runs_in_the_users_environment_not_jitterscopes(tmp_path):
    """jitterscope keeps numpy's OpenBLAS to one thread in its own processes (ownenv.py): CMD gets the user's
    environment, without that setting, and a setting of the user's own unchanged."""
    import os

    seen = tmp_path / "seen"
    script = f'echo "${{OPENBLAS_NUM_THREADS-unset}} ${{JITTERSCOPE_OWN_ENV-unset}}" >> {seen}'
    for user in (None, "4"):
        env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "JITTERSCOPE_OWN_ENV")}
        if user:
            env["OPENBLAS_NUM_THREADS"] = user
        out = tmp_path / f"run{user}"
        p = jitterscope("sync", "--no-trace", "--no-report", "--out", str(out), "--", "/bin/sh", "-c", script, env=env)
        assert p.returncode == 0, p.stderr
    assert seen.read_text().splitlines() == ["unset unset", "4 unset"]
