"""place's raw record stream (place/raw.py): what the writer appends the reader gives back, and a record
cut by a kill (a torn last line) is dropped and counted, never read as data nor an error."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from jitterscope.place import build
from jitterscope.place.raw import RawWriter, read_raw
from jitterscope.place.results import Decision, Observation, TaskState

ROW = cast(
    Observation,
    {
        **dict.fromkeys(("pid", "start_ns", "cpu", "last_cpu", "run_ns", "wait_ns", "slices", "vcsw", "ivcsw"), 0),
        **dict.fromkeys(("minflt", "majflt", "ops", "specials", "faults", "avx512_ms", "cycles", "llc_misses"), 0),
        **{"instructions": -1, "llc_refs": -1, "weight": 0.5, "source": "declared", "name": "w", "end_ns": 7},
    },
)
DEC = cast(
    Decision,
    {"t_ns": 9, "policy": "L", "pid": 1, "name": "w", "action": "run", "cpu": 0, "value": 1.0, "reason": "r"},
)
STATE = cast(
    TaskState,
    {
        **{"pid": 1, "name": "w", "command": ["w"], "home": 0, "declared": None, "weight": 0.5, "run_ns": 5},
        **{"wait_ns": 0, "ivcsw": 0, "ops": 0, "specials": 0, "faults": 0, "window_ns": 8, "faulting_quanta": 0},
        **{"banned": False, "credit_ns": 0.0, "end": "", "protected": False, "heartbeats": True},
    },
)


def _stream(path: Path) -> None:
    w = RawWriter(path)
    w.states(3, [STATE])
    w.observation(ROW)
    w.decision(DEC)
    w.cost(250)
    w.split(4, True)
    w.split(5, True)  # no change: not written
    w.split(6, False)
    w.close()


def test_the_stream_reads_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "place.raw"
    _stream(path)
    raw = read_raw(path)
    assert raw.observations == [ROW] and raw.decisions == [DEC] and raw.costs == [250]
    assert raw.splits == [(4, True), (6, False)]
    assert raw.states == [STATE] and raw.states_ns == 3 and raw.end is None and raw.torn == 0
    assert raw.last_ns == 9
    assert [m.split(" (")[0] for m in build.missing(raw)] == [
        "its end: wall_ns and duration_s are those of its last record",
        "the heartbeat latencies",
        "the tasks' counters after their last state",
    ]
    (task,) = raw.tasks  # the last states stand in for the end a kill took
    assert task["end"] == "running when the run was cut short" and task["latency_ns"] is None


def test_a_torn_last_record_is_dropped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "place.raw"
    _stream(path)
    whole = path.read_bytes()
    last = whole.splitlines(keepends=True)[-1]
    assert last == b'{"k":"c","ns":[250]}\n'  # the snapshots' costs go out with each flush
    for cut in (1, 10, len(last) - 1):  # a kill inside the last record
        path.write_bytes(whole[:-cut])
        raw = read_raw(path)
        assert raw.torn == len(last) - cut
        assert raw.costs == [] and raw.splits == [(4, True), (6, False)] and raw.observations == [ROW]
        assert "cut by the kill" in build.missing(raw)[0]
    path.write_bytes(whole + b'{"k":"o","r":{"pid"')  # an unterminated record after whole ones
    raw = read_raw(path)
    assert raw.torn == len(b'{"k":"o","r":{"pid"') and raw.costs == [250] and raw.observations == [ROW]


def test_a_stream_with_its_end_misses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "place.raw"
    w = RawWriter(path)
    w.states(3, [STATE])
    w.end(10, "duration", [{**STATE, "end": "running at the end", "beats": 0, "beats_lost": 0, "latency_ns": None}])
    w.close()
    raw = read_raw(path)
    assert raw.end is not None and raw.end["wall_ns"] == 10 and build.missing(raw) == []
    assert [t["end"] for t in raw.tasks] == ["running at the end"]
