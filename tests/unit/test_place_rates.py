"""place's per-task rates: work counted from a task's first to its last observation, divided by that window
(it was divided by the whole run: 30,686 ops/s printed against 33,621 in the window)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from jitterscope.place.build import _tasks
from jitterscope.place.observe import Snap
from jitterscope.place.policy import Task
from jitterscope.place.raw import Raw
from jitterscope.place.tasks import Placed


def _snap(ops: int, run_ns: int) -> Snap:
    return Snap(run_ns, 0, 0, 0, 0, 0, 0, 0, 0, ops, 0, 0, None, None)


def test_rate_is_over_the_observed_window():
    prog = SimpleNamespace(argv=["w"], pid=1)
    # observed from 0.2 s to 0.9 s of a 1 s run, 70,000 ops in between: 100,000 ops/s
    p = Placed(Task(1, "w"), prog, first=_snap(5_000, 0), snap=_snap(75_000, 700_000_000))  # type: ignore[arg-type]
    p.first_ns, p.snap_ns, p.end = 200_000_000, 900_000_000, "ended (exit code 0)"
    (t,) = _tasks(Raw(end={"wall_ns": 1_000_000_000, "ended_by": "duration", "tasks": [p.final()]}))
    assert t["window_ns"] == 700_000_000
    assert t["ops_per_s"] == pytest.approx(100_000.0)
