"""`jitterscope sync` sees semaphores (sem_wait/sem_timedwait/sem_post), and its summary names what it cannot see.

semgold.c prints the waits it measured itself: the run's semaphore waits must add up to them (a program with
1,000 semaphore waits totalling 2 s once reported none)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.integration.conftest import jitterscope, sync_program

ROUNDS, MS = 20, 5


@pytest.fixture(scope="module")
def semgold(tmp_path_factory) -> str:
    return sync_program(tmp_path_factory, "semgold")


@pytest.fixture(scope="module")
def sem_run(semgold, tmp_path_factory) -> tuple[dict, dict, Path]:
    exe = semgold
    out = tmp_path_factory.mktemp("sem") / "run"
    # The shortest threshold N: every post-wait is jitter, so `done` is among the objects whatever the machine's
    # noise.  A quiet machine wakes the waiter in 1-3 us, under the default 10 us (c21: none of 20 was over).
    p = jitterscope(
        "sync",
        "--threshold",
        "10ns",
        "--no-trace",
        "--no-report",
        "--out",
        str(out),
        "--",
        str(exe),
        str(ROUNDS),
        str(MS),
    )
    assert p.returncode == 0, p.stderr
    truth = json.loads(next(ln for ln in p.stdout.splitlines() if ln.startswith('{"waits"')))
    return truth, json.loads((out / "summary.json").read_text()), out


def test_semaphore_waits_add_up_to_the_programs_own(sem_run):
    truth, _, run = sem_run
    waits = [w for w in pq.read_table(run / "waits.parquet").to_pylist() if w["op"] == "sem" and w["tid"] == w["pid"]]
    assert len(waits) == truth["waits"] == ROUNDS  # the main thread waits only on `done`, each time asleep
    total = sum(w["exit_ns"] - w["enter_ns"] for w in waits)
    # the program's clock_gettime brackets the call: the interposer's TSC span is inside it, by at most a few us
    assert truth["waited_ns"] - ROUNDS * 20_000 <= total <= truth["waited_ns"], (total, truth)
    assert {w["releaser_tid"] for w in waits} and all(w["releaser_tid"] not in (None, w["tid"]) for w in waits)
    assert all(w["release_ns"] >= w["enter_ns"] for w in waits)


def test_post_wait_intervals_and_objects(sem_run):
    _, s, run = sem_run
    rows = pq.read_table(run / "jitter.parquet").to_pylist()
    main = [r for r in rows if r["type"] == "pw" and r["tid"] == r["pid"]]
    assert len(main) == ROUNDS  # one post-wait interval per wait on `done`, each from the post to the return
    assert sum(r["type"] == "p" for r in rows) >= ROUNDS  # every post to `done` found the main thread asleep
    assert any(o["kind"] == "semaphore" and o["symbol"] == "done" for o in s["objects"]), s["objects"]


def test_the_summary_names_what_it_cannot_see(sem_run):
    _, s, _ = sem_run
    unseen = " ".join(s["unseen"])
    assert "spin lock" in unseen and "dlsym" in unseen and "static" in unseen
    from jitterscope.sync.render import notes

    assert any("not seen by the interposer" in n for n in notes(s))


def test_a_contended_spin_lock_is_a_wait_of_its_length(semgold, tmp_path):
    out = tmp_path / "spin"
    p = jitterscope("sync", "--no-trace", "--no-report", "--out", str(out), "--", semgold, "spin", "20")
    assert p.returncode == 0, p.stderr
    truth = json.loads(next(ln for ln in p.stdout.splitlines() if ln.startswith('{"spun_ns"')))
    # main may also wait in its joins, when a thread has not exited yet: those are the joins', not the spin's
    first, w = sorted(
        (r for r in pq.read_table(out / "waits.parquet").to_pylist() if r["op"] != "join"), key=lambda r: r["enter_ns"]
    )
    assert first["op"] != "spin"  # the semaphore wait before, which made main's ring
    assert w["op"] == "spin" and w["releaser_tid"] is None  # the releaser of a spin lock is not seen (said so)
    # the interposer's window lies inside the program's: shorter by its own overhead (under 20 us), and by
    # whatever time the thread was off the CPU outside it (c32, under a CPU hog: 36 us)
    off_cpu = max(truth["spun_ns"] - truth["spun_cpu_ns"], 0)
    assert truth["spun_ns"] - 20_000 - off_cpu <= w["exit_ns"] - w["enter_ns"] <= truth["spun_ns"], (w, truth)
