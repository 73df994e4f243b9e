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
    p = jitterscope("sync", "--no-trace", "--no-report", "--out", str(out), "--", exe, mode, str(MS))
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
