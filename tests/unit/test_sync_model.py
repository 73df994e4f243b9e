"""The sync event model on hand-built records: threshold rules, matching, critical path (spec A.3, A.5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterscope.sync import critical, model
from jitterscope.sync import records as R

US = 1000


@pytest.mark.parametrize("t_us, excess, whole", [(9, 0, 0), (10, 0, 0), (25, 15, 25)])
def test_threshold_rules(t_us, excess, whole):
    assert model.jitter_of(t_us * US, 10 * US, "excess") == excess * US
    assert model.jitter_of(t_us * US, 10 * US, "whole") == whole * US


def _events(rows: list[tuple]) -> model.Events:
    """rows: (tid, op, obj, aux, enter_us, exit_us, flags, result)"""
    a = np.array(rows, dtype=object)
    n = len(rows)
    ev = model.Events(
        np.full(n, 100, np.int32),
        a[:, 0].astype(np.int32),
        a[:, 1].astype(np.int16),
        a[:, 2].astype(np.uint64),
        a[:, 3].astype(np.uint64),
        np.zeros(n, np.uint64),
        (a[:, 4].astype(float) * US).astype(np.int64),
        (a[:, 5].astype(float) * US).astype(np.int64),
        np.zeros(n, np.int32),
        a[:, 6].astype(np.int32),
        a[:, 7].astype(np.int32),
        [{"pid": 100, "comm": "t", "start_ns": 0, "file": "x"}],
    )
    order = np.lexsort((ev.exit, ev.enter))
    for f in ("pid", "tid", "op", "obj", "aux", "site", "enter", "exit", "cpu", "flags", "result"):
        setattr(ev, f, getattr(ev, f)[order])
    return ev


def test_lock_unlock_from_the_last_unlock_before_lx():
    ev = _events(
        [
            (101, R.LOCK, 7, 0, 10, 260, R.SF_SLEPT, 0),  # waits 10..260 us
            (100, R.UNLOCK, 7, 0, 40, 41, 0, 0),  # an earlier unlock (re-stamped)
            (102, R.UNLOCK, 7, 0, 60, 62, 0, 0),  # the last unlock before l_x: lu = 200 us
            (102, R.UNLOCK, 7, 0, 300, 301, 0, 0),  # after l_x: not this wait's
        ]
    )
    m = model.match(ev, model.threads(ev), model.Options())
    lu = [r for r in m.intervals if r["type"] == "lu"]
    assert len(lu) == 1 and lu[0]["t_ns"] == 200 * US and lu[0]["jitter_ns"] == 190 * US
    assert lu[0]["releaser_tid"] == 102 and m.waits[0]["release_ns"] == 60 * US


def test_lock_without_sleep_is_no_lu_unless_asked():
    ev = _events([(101, R.LOCK, 7, 0, 10, 60, 0, 0), (102, R.UNLOCK, 7, 0, 20, 21, 0, 0)])
    assert not [r for r in model.match(ev, model.threads(ev), model.Options()).intervals if r["type"] == "lu"]
    opts = model.Options(lu_sleep_only=False)
    assert [r["t_ns"] for r in model.match(ev, model.threads(ev), opts).intervals if r["type"] == "lu"] == [40 * US]


def test_signal_fifo_and_broadcast_stamps():
    ev = _events(
        [
            (101, R.COND_WAIT, 9, 0, 0, 130, 0, 0),
            (102, R.COND_WAIT, 9, 0, 5, 400, 0, 0),
            (103, R.COND_SIGNAL, 9, 0, 100, 102, 0, 0),  # oldest pending stamp -> the first waiter out
            (103, R.COND_BROADCAST, 9, 0, 300, 303, 0, 0),  # stamps the waiter still unclaimed
            (104, R.COND_WAIT, 9, 0, 10, 50, 0, 110),  # ETIMEDOUT: nothing
        ]
    )
    m = model.match(ev, model.threads(ev), model.Options())
    got = sorted((r["type"], r["tid"], r["t_ns"] // US) for r in m.intervals if r["type"] in ("sw", "bw"))
    assert got == [("bw", 102, 100), ("sw", 101, 30)]
    assert m.unmatched.get("wait_timed_out") == 1


def test_barrier_last_arriver_releases_the_round():
    ev = _events(
        [
            (100, R.BARRIER_INIT, 5, 3, 0, 0, 0, 0),
            (101, R.BARRIER_WAIT, 5, 0, 10, 320, 0, 0),
            (102, R.BARRIER_WAIT, 5, 0, 12, 330, 0, 0),
            (103, R.BARRIER_WAIT, 5, 0, 300, 305, R.SF_SERIAL, 0),  # 290 us late
        ]
    )
    m = model.match(ev, model.threads(ev), model.Options())
    barw = sorted((r["tid"], r["t_ns"] // US, r["releaser_tid"]) for r in m.intervals if r["type"] == "barw")
    assert barw == [(101, 20, 103), (102, 30, 103)]
    assert [w["enter_ns"] // US for w in m.waits] == [10, 12]  # each waited ~290 us for the last arriver


def test_counter_rule_is_max_on_join():
    """Spec A.5: parent at 5 spawns A and B; A accrues 20, B 7, the parent 3; after both joins: 25."""
    rows = [
        {"tid": 1, "creator_tid": 0, "create_ns": None, "start_ns": 0, "joined_by": 0, "join_ns": None},
        {"tid": 2, "creator_tid": 1, "create_ns": 10, "start_ns": 11, "joined_by": 1, "join_ns": 100},
        {"tid": 3, "creator_tid": 1, "create_ns": 12, "start_ns": 13, "joined_by": 1, "join_ns": 101},
    ]
    iv = [
        {"tid": 1, "end_ns": 5, "jitter_ns": 5, "type": "lu"},
        {"tid": 2, "end_ns": 50, "jitter_ns": 20, "type": "sw"},
        {"tid": 3, "end_ns": 60, "jitter_ns": 7, "type": "sw"},
        {"tid": 1, "end_ns": 70, "jitter_ns": 3, "type": "u"},
    ]
    res = critical.counter_rule(rows, iv, root=1)
    assert res.jitter_ns == 25 and res.per_thread[3] == 12


def test_walk_follows_the_releaser():
    rows = [
        {"pid": 1, "tid": 1, "creator_tid": 0, "create_ns": None, "start_ns": 0, "end_ns": 1000},
        {"pid": 1, "tid": 2, "creator_tid": 1, "create_ns": 100, "start_ns": 120, "end_ns": 900},
    ]
    waits = [{"wait": 0, "tid": 1, "enter_ns": 200, "release_ns": 880, "exit_ns": 950, "releaser_tid": 2}]
    steps = critical.walk(rows, waits, 1)
    assert [(s["tid"], s["kind"], s["start_ns"], s["end_ns"]) for s in steps] == [
        (1, "run", 0, 100),
        (2, "create", 100, 120),
        (2, "run", 120, 880),
        (1, "wake", 880, 950),
        (1, "run", 950, 1000),
    ]
    assert sum(s["end_ns"] - s["start_ns"] for s in steps) == 1000


def test_layout_constants():
    assert R.RECORD_DTYPE.itemsize == 64 and R.HEADER_DTYPE.itemsize == 128
    assert Path(R.__file__).name == "records.py"


def test_thread_labels_name_another_jitterscope_probe_never_unexplained():
    """A sync run has no probe: another run's js-probe/1 on the holder's CPU is a named source; the
    program's threads are found by tid, the sync command's own process is jitterscope's overhead."""
    import pyarrow as pa

    from jitterscope.measure.attribution import source_table
    from jitterscope.sync.causes import label_threads

    names = pa.array(["js-probe/1", "syncgold", "jitterscope", "jitterscope", "python", "local_timer"])
    kinds = pa.array(["thread", "thread", "thread", "thread", "thread", "irq"])
    pids = np.array([900, 42, 42, 77, 55, 42], np.int32)  # 42: the program (before exec it was 'jitterscope')
    mine, labels = label_threads(names, kinds, pids, {42, 43}, own_tids={77})
    assert mine.tolist() == [False, True, True, False, False, False]
    assert labels.to_pylist() == [
        "js-probe/1 (another jitterscope)",
        "syncgold (tid 42)",
        "jitterscope (tid 42)",
        "jitterscope (jitterscope)",
        "python",
        "local_timer",
    ]
    sources, codes = source_table(kinds, labels)
    assert codes[0] != 0 and sources[codes[0]] == ("thread", "js-probe/1 (another jitterscope)")


def test_thread_labels_name_every_thread_of_this_sync_as_its_own():
    """The sync command's warm-up thread, its fit's process and its trace reader are its own overhead, not
    another jitterscope: a run on xz named them `jitterscope (another jitterscope)`, 42% of non-sync
    jitter, because only the main thread (the session's pid) was known."""
    import pyarrow as pa

    from jitterscope.sync.causes import label_threads

    names = pa.array(["jitterscope", "jitterscope", "jitterscope", "jitterscope-tra", "jitterscope"])
    kinds = pa.array(["thread"] * 5)
    pids = np.array([77, 78, 79, 80, 900], np.int32)  # main, warm-up, fit process, reader; 900 another run's
    _, labels = label_threads(names, kinds, pids, {42}, own_tids={77, 78, 79, 80})
    assert labels.to_pylist() == [
        "jitterscope (jitterscope)",
        "jitterscope (jitterscope)",
        "jitterscope (jitterscope)",
        "jitterscope-tra (jitterscope)",
        "jitterscope (another jitterscope)",
    ]


def test_tree_thread_ids_finds_threads_and_started_processes():
    """sync records its own threads and every process it started (the fit's, the trace reader) by id."""
    import os
    import subprocess
    import threading
    import time

    from jitterscope.sysinfo import tree_thread_ids

    stop = threading.Event()
    th = threading.Thread(target=stop.wait)
    th.start()
    child = subprocess.Popen(["sh", "-c", "sleep 30 & exec sleep 30"])
    children = Path(f"/proc/{child.pid}/task/{child.pid}/children")
    grandchild = 0
    try:
        deadline = time.monotonic() + 10
        while not grandchild and time.monotonic() < deadline:
            grandchild = int((children.read_text().split() or ["0"])[0])
        tids = tree_thread_ids(os.getpid())
        assert grandchild and {os.getpid(), th.native_id, child.pid, grandchild} <= tids
    finally:
        if grandchild:
            os.kill(grandchild, 9)
        child.kill()
        child.wait()
        stop.set()
        th.join()


def test_subframes_restart_at_create_and_join_and_book_jitter_pro_rata():
    from jitterscope.sync import subframes as SF

    assert SF.bounds(0, 1000, 330, []) == [(0, 330), (330, 660), (660, 990), (990, 1000)]
    # a create at 500 forces a deadline: the subframe running then ends there, the next starts at 500
    assert SF.bounds(0, 1000, 330, [500, 2000]) == [(0, 330), (330, 500), (500, 830), (830, 1000)]
    threads = [
        {
            "pid": 1,
            "tid": 1,
            "creator_tid": 0,
            "create_ns": None,
            "start_ns": 0,
            "end_ns": 1000,
            "joined_by": 0,
            "join_ns": None,
        },
        {
            "pid": 1,
            "tid": 2,
            "creator_tid": 1,
            "create_ns": 500,
            "start_ns": 510,
            "end_ns": 700,
            "joined_by": 1,
            "join_ns": 800,
        },
    ]
    jitter = [
        {"tid": 1, "type": "jw", "start_ns": 300, "end_ns": 400, "jitter_ns": 50},  # straddles 330
        {"tid": 1, "type": "hd", "start_ns": 0, "end_ns": 1000, "jitter_ns": 999},  # not the thread's own
        {"tid": 2, "type": "sw", "start_ns": 600, "end_ns": 650, "jitter_ns": 20},
    ]
    rows = SF.subframes(threads, jitter, length=330, warmup=1)
    main = [r for r in rows if r["tid"] == 1]
    assert [(r["start_ns"], r["end_ns"]) for r in main] == [(0, 330), (330, 500), (500, 800), (800, 1000)]
    assert [r["jitter_ns"] for r in main] == [15, 35, 0, 0]
    assert [r["forced"] for r in main] == [False, True, True, False] and main[0]["warmup"] and not main[1]["warmup"]
    assert [r["jitter_ns"] for r in rows if r["tid"] == 2] == [20]
    s = SF.summary(rows, 330, 1)
    assert s["count"] == 5 and s["measured"] == 3 and s["with_jitter"] == 1 and s["jitter_ns"] == 35


def test_time_lost_inside_a_releasers_own_call_is_booked_once():
    """A signaller preempted inside pthread_cond_signal: its `s` interval holds that time, so the non-sync piece
    is what lies outside it (it was booked twice, overstating the critical-path counter)."""
    from jitterscope.sync.causes import _non_sync_pieces

    intervals = [
        {"type": "s", "tid": 7, "start_ns": 1_000, "end_ns": 5_000},  # the signal call
        {"type": "sw", "tid": 8, "start_ns": 1_000, "end_ns": 9_000},  # another thread's wake-up
        {"type": "lu", "tid": 7, "start_ns": 20_000, "end_ns": 30_000},
    ]
    pieces = {7: np.array([(0, 500, 4_000), (0, 6_000, 7_000), (0, 25_000, 40_000)]), 8: np.array([(1, 2_000, 3_000)])}
    got = _non_sync_pieces(intervals, pieces).tolist()
    assert got == [[7, 0, 500, 1_000], [7, 0, 6_000, 7_000], [7, 0, 30_000, 40_000]]


def _wait(k: int, tid: int, enter: int, release: int | None, releaser: int | None) -> dict:
    return {
        "wait": k,
        "pid": 1,
        "tid": tid,
        "obj": 5,
        "enter_ns": enter,
        "release_ns": release,
        "releaser_tid": releaser,
    }


def test_holder_pieces_are_the_releasers_lost_time_inside_each_wait_in_wait_order():
    """Holder delay: per wait with a known releaser, the releaser's lost pieces cut to [enter, release], by wait
    and then time; a wait whose releaser lost nothing then (or is unknown, or never released) has none."""
    from jitterscope.sync.causes import _holder_pieces

    pieces = {7: np.array([(0, 100, 200), (1, 300, 400), (0, 900, 950)]), 8: np.array([(1, 10, 20)])}
    waits = [
        _wait(0, 9, 150, 350, 7),  # two pieces of 7, each cut to the wait
        _wait(1, 9, 500, 800, 7),  # 7 lost nothing then
        _wait(2, 9, 0, 30, 8),  # all of 8's piece
        _wait(3, 9, 0, 1000, None),  # releaser unknown
        _wait(4, 9, 0, None, 7),  # never released
        _wait(5, 9, 920, 1000, 7),
    ]
    kept, got = _holder_pieces(waits, pieces)
    assert kept == [0, 2, 5]  # each wait with a piece, in order; the rows name them by place in that list
    assert got.tolist() == [[0, 0, 150, 200], [0, 1, 300, 350], [1, 1, 10, 20], [2, 0, 920, 950]]
    kept, got = _holder_pieces([waits[1]], pieces)  # a releaser with pieces, none inside the wait
    assert kept == [] and got.shape == (0, 4)


def test_interval_columns_hold_the_rows_and_give_them_back():
    """The analysis reads the intervals' columns once (sync/model.py IntervalColumns): a missing wait or releaser
    is -1 there and None again in the rows made back from them."""
    rows = [
        {"type": "bw", "pid": 1, "tid": 2, "obj": 2**63 + 5, "start_ns": 10, "end_ns": 30, "t_ns": 20, "jitter_ns": 10,
         "id": 0, "wait": 4, "releaser_tid": 3, "cpu": 1, "site": 7},
        {"type": "ns", "pid": 1, "tid": 3, "obj": 0, "start_ns": 40, "end_ns": 45, "t_ns": 5, "jitter_ns": 0, "id": 1,
         "wait": None, "releaser_tid": None, "cpu": 0, "site": 0},
    ]  # fmt: skip
    c = model.IntervalColumns.of(rows)
    assert len(c) == 2 and c.obj.tolist() == [2**63 + 5, 0] and c.wait.tolist() == [4, -1]
    assert c.is_type("ns").tolist() == [False, True] and len(c.take(c.jitter > 0)) == 1
    back = c.rows(np.arange(2))
    assert back[1]["wait"] is None and back[1]["releaser_tid"] is None
    assert back[0] == {k: rows[0][k] for k in back[0]}


def test_counter_rule_adds_before_a_create_or_join_at_the_same_time():
    """Jitter ending at a join's time counts before the join (the ops' order: add, create, join)."""
    rows = [
        {"tid": 1, "creator_tid": 0, "create_ns": None, "start_ns": 0, "joined_by": 0, "join_ns": None},
        {"tid": 2, "creator_tid": 1, "create_ns": 10, "start_ns": 11, "joined_by": 1, "join_ns": 50},
    ]
    iv = [
        {"tid": 2, "end_ns": 50, "jitter_ns": 9, "type": "sw"},  # at the join: counted before it
        {"tid": 1, "end_ns": 10, "jitter_ns": 4, "type": "lu"},  # at the create: the child starts with it
        {"tid": 2, "end_ns": 60, "jitter_ns": 100, "type": "u"},  # after the join: its own only
    ]
    res = critical.counter_rule(rows, iv, root=1)
    assert res.jitter_ns == 13 and res.per_thread == {1: 13, 2: 113}


def test_rows_by_groups_each_keys_rows_in_their_order():
    """The analysis's per-thread grouping (model.rows_by): each key's rows in the order given, as a scan per key
    would give them, keys absent from `rows` absent."""
    keys = np.array([5, 3, 5, 9, 3, 5, 7])
    rows = np.array([0, 1, 2, 4, 5, 6])  # row 3 (key 9) left out
    got = {k: v.tolist() for k, v in model.rows_by(keys, rows).items()}
    assert got == {k: [r for r in rows.tolist() if keys[r] == k] for k in (3, 5, 7)}
    assert model.rows_by(keys, np.zeros(0, np.int64)) == {}
