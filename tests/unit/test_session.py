"""The session lifecycle (session.py) drives a mode's steps: meta.json marked incomplete from the first
moment, a run kept once recorded and removed when nothing was, Ctrl-C ends the capture and keeps the run,
a dead helper makes the run interrupted, and load_run refuses an unfinished run in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jitterscope import session
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import base_meta, load_run


class Fake:
    kind = "measure"

    def __init__(self, run_dir: Path, record: bool = True, capture_raises: type[BaseException] | None = None) -> None:
        self.run_dir, self.record, self.raises = run_dir, record, capture_raises
        self.seen: list[str] = []

    def start_meta(self) -> dict[str, Any]:
        return base_meta(kind="measure", id=self.run_dir.name)

    def setup(self, s: session.Session) -> None:
        self.seen.append(json.loads((self.run_dir / "meta.json").read_text())[session.INCOMPLETE])
        s.journal.scratch_dir("jitterscope-session-test-", parent=self.run_dir.parent)
        s.recorded = self.record

    def capture(self, s: session.Session) -> None:
        self.seen.append(json.loads((self.run_dir / "meta.json").read_text())[session.INCOMPLETE])
        if self.raises is not None:
            raise self.raises

    def stop(self, s: session.Session) -> None:
        self.seen.append("stop")

    def analyze(self, s: session.Session) -> str:
        self.seen.append(json.loads((self.run_dir / "meta.json").read_text())[session.INCOMPLETE])
        return "built"


def test_the_steps_run_in_order_with_meta_marked_at_each_stage(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    steps = Fake(run_dir)
    s, got = session.run(steps, run_dir)
    assert got == "built" and not s.interrupted
    assert steps.seen == ["starting", "capturing", "stop", "analysing"]
    assert not list(tmp_path.glob("jitterscope-session-test-*"))  # the journal was undone before analysis
    with pytest.raises(JitterscopeError, match=f"an unfinished run .*jitterscope analyze {run_dir}"):
        load_run(run_dir)  # the fake analysis left meta.json marked


def test_ctrl_c_ends_the_capture_and_keeps_the_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    s, _ = session.run(Fake(run_dir, capture_raises=KeyboardInterrupt), run_dir)
    assert s.interrupted and s.ended_by == "interrupted"
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["interrupted"] is True and meta[session.INCOMPLETE] == "analysing"


def test_nothing_recorded_removes_the_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(JitterscopeError, match="nothing was measured"):
        session.run(Fake(run_dir, record=False, capture_raises=KeyboardInterrupt), run_dir)
    assert not run_dir.exists()
    run_dir.mkdir()
    with pytest.raises(RuntimeError):
        session.run(Fake(run_dir, record=False, capture_raises=RuntimeError), run_dir)
    assert not run_dir.exists()


def test_a_failure_after_recording_keeps_the_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(RuntimeError):
        session.run(Fake(run_dir, capture_raises=RuntimeError), run_dir)
    assert session.started_as(run_dir, "measure")


def test_a_dead_child_makes_the_run_interrupted(tmp_path: Path) -> None:
    s = session.Session("measure", tmp_path, {})
    s.child_died("the probe died (killed)")
    assert s.interrupted and s.failed and s.ended_by == "the probe died (killed)"


class Watched(Fake):
    """Sees the session's watchdog during the analysis (it journals the parser's scratch there)."""

    dog: tuple[int | None, str] = (None, "")

    def analyze(self, s: session.Session) -> str:
        pid = s._dog.pid
        self.dog = (pid, Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if pid else "")
        return super().analyze(s)


def test_the_watchdog_is_armed_through_the_analysis_and_gone_after(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    steps = Watched(run_dir)
    session.run(steps, run_dir)
    pid, state = steps.dog
    if pid is None:
        pytest.skip("no watchdog: the native programs are not built (make native)")
    assert state in ("S", "R"), state  # alive, waiting on this process
    assert not Path(f"/proc/{pid}").exists()  # disarmed and reaped once the run was built


@pytest.mark.parametrize("kind, says", [("measure", "before the probe started"), ("sync", "CMD left no sync records")])
def test_a_session_killed_at_start_up_is_one_line_for_analyze(
    tmp_path: Path, kind: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from jitterscope.cli import main

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    session.write_meta(run_dir, {**base_meta(kind=kind, id="run"), session.INCOMPLETE: "starting"})
    assert main(["analyze", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "(the session reached: starting)" in err, err


@pytest.mark.parametrize("kind", ["sync", "pipeline", "protect", "place", "measure"])
def test_analyze_refuses_a_run_its_jitterscope_is_still_recording(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`analyze` on a live sync run "finished" it as if cut short (trace said lost, exit code unknown) while
    CMD ran, and a pipeline's recovery deletes raw/ under its running runtime: a session's meta.json names
    the jitterscope recording it (pid and start time), and analyze refuses in one line while it lives."""
    import subprocess
    import sys

    from jitterscope.cli import main
    from jitterscope.journal import process_start_time

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        owner = {"pid": other.pid, "start": process_start_time(other.pid)}
        meta = {**base_meta(kind=kind, id="run"), session.INCOMPLETE: "capturing", session.OWNER: owner}
        session.write_meta(run_dir, meta)
        assert session.recording(run_dir) == other.pid
        assert main(["analyze", str(run_dir)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"still being recorded (jitterscope pid {other.pid})" in err, err
        assert sorted(p.name for p in run_dir.iterdir()) == ["meta.json"]  # nothing written or removed
    finally:
        other.kill()
        other.wait()
    assert session.recording(run_dir) is None  # its jitterscope is gone: analyze may finish the run


def test_a_session_names_its_owner_until_the_run_is_finished(tmp_path: Path) -> None:
    import os

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    steps = Fake(run_dir)
    owners: list[Any] = []
    steps.stop = lambda s: owners.append(json.loads((run_dir / "meta.json").read_text())[session.OWNER])  # type: ignore[method-assign]
    session.run(steps, run_dir)
    assert owners and owners[0]["pid"] == os.getpid()
    assert session.recording(run_dir) is None  # our own run is never "someone else's"
