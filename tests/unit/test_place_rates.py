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


def test_cachegrind_ll_rounds_the_machines_cache_down_and_refuses_a_given_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """cachegrind simulates only a power-of-two number of sets: a 480 MiB 16-way LL (a cloud Xeon's) is
    simulated as 256 MiB, with a note; the same size given as --ll is refused, naming the two sizes near it."""
    from jitterscope.errors import UsageError
    from jitterscope.place.profile import _cachegrind_ll

    xeon = (480 << 20, 16, 64)
    assert _cachegrind_ll(None, xeon) == (256 << 20, 16, 64)
    assert "256M LL: the machine's 480M" in capsys.readouterr().err
    assert _cachegrind_ll(None, (32 << 20, 16, 64)) == (32 << 20, 16, 64)
    assert _cachegrind_ll("8M", xeon) == (8 << 20, 16, 64)
    with pytest.raises(UsageError, match=r"--ll 480M: .* try 256M or 512M"):
        _cachegrind_ll("480M", xeon)
