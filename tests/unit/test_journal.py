"""The change journal: undo on exit, and recovery after a process died."""

import os
import subprocess
import sys
import textwrap

import pytest

from jitterscope import journal


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("JITTERSCOPE_STATE_DIR", str(tmp_path / "state"))


def test_file_setting_is_restored_on_exit(tmp_path):
    knob = tmp_path / "knob"
    knob.write_text("always [madvise] never\n")
    with journal.Journal("t") as j:
        j.set_file(knob, "never")
        assert knob.read_text() == "never"
    assert knob.read_text() == "madvise"  # the bracketed choice is the value written back
    assert journal.stale_journals() == []


def test_undo_runs_newest_first(tmp_path):
    knob = tmp_path / "knob"
    knob.write_text("a")
    with journal.Journal("t") as j:
        j.set_file(knob, "b")
        j.set_file(knob, "c")
    assert knob.read_text() == "a"


def test_a_killed_process_changes_are_undone_by_recovery(tmp_path):
    knob = tmp_path / "knob"
    knob.write_text("1")
    d = tmp_path / "made-dir"
    code = textwrap.dedent(f"""
        import os, time
        from jitterscope import journal
        j = journal.Journal("victim")
        j.set_file({str(knob)!r}, "0")
        j.begin("rmdir", path={str(d)!r}); os.mkdir({str(d)!r})
        print("ready", flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env={**os.environ})
    assert p.stdout.readline().strip() == "ready"
    # While it lives, its journal is not stale.
    assert journal.stale_journals() == []
    p.kill()
    p.wait()
    assert knob.read_text() == "0" and d.exists()
    undone = journal.recover_stale()
    assert [e["op"] for e in undone] == ["file", "rmdir"]
    assert knob.read_text() == "1" and not d.exists()
    assert journal.stale_journals() == []


def test_background_process_group_is_killed_and_reaped():
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)
    with journal.Journal("t") as j:
        j.process_group(p.pid)
    assert p.poll() is not None


def test_a_recycled_pid_is_never_touched():
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        entry = {"op": "killpg", "pgid": p.pid, "start": 1}  # a different start time
        journal.UNDO["killpg"](entry)
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()
