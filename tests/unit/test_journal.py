"""The change journal: undo on exit, and recovery after a process died."""

import os
import subprocess
import sys
import textwrap

from jitterscope import journal


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
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env={**os.environ})
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


def _killed(code: str) -> None:
    """Run `code` (which journals changes, then prints ready) in a child and kill -9 it."""
    p = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code) + "\nprint('ready', flush=True)\nimport time; time.sleep(60)\n"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    assert p.stdout.readline().strip() == "ready"
    p.kill()
    p.wait()


def test_what_could_not_be_undone_is_retried_later(tmp_path):
    knob = tmp_path / "knob"
    knob.write_text("1")
    _killed(f"""
        from pathlib import Path
        from jitterscope import journal
        journal.Journal("victim").set_file({str(knob)!r}, "0")
        Path({str(knob)!r}).unlink(); Path({str(knob)!r}).mkdir()
    """)
    first = journal.recover_stale()
    assert [e["result"] for e in first] == ["failed"]
    assert len(journal.stale_journals()) == 1  # kept for a retry
    knob.rmdir()
    knob.write_text("0")
    second = journal.recover_stale()
    assert [e["result"] for e in second] == ["restored"] and knob.read_text() == "1"
    assert journal.stale_journals() == []


def test_a_released_entry_is_not_undone_again_after_a_crash(tmp_path):
    knob = tmp_path / "knob"
    knob.write_text("1")
    _killed(f"""
        from pathlib import Path
        from jitterscope import journal
        j = journal.Journal("victim")
        e = j.begin("file", path={str(knob)!r}, original="1"); Path({str(knob)!r}).write_text("0")
        j.release(e)
        Path({str(knob)!r}).write_text("2")   # changed later by someone else: not ours any more
    """)
    assert journal.recover_stale() == [] and knob.read_text() == "2"


def test_a_scratch_dir_is_removed_but_undelivered_data_is_kept(tmp_path):
    keep_to = tmp_path / "kept-run"
    _killed(f"""
        from jitterscope import journal
        j = journal.Journal("rank")
        d = j.scratch_dir("js-test-", {str(tmp_path)!r}, keep="run", keep_to={str(keep_to)!r})
        (d / "run").mkdir(); (d / "run" / "detours.raw").write_bytes(b"x")
        (d / "junk").write_text("y")
    """)
    undone = journal.recover_stale()
    assert [e["result"] for e in undone] == ["kept"]
    assert (keep_to / "detours.raw").read_bytes() == b"x"
    assert not list(tmp_path.glob("js-test-*"))
    with journal.Journal("t") as j:
        empty = j.scratch_dir("js-test-", tmp_path, keep="run", keep_to=tmp_path / "never")
    assert not empty.exists() and not (tmp_path / "never").exists()


def test_a_process_later_journal_is_recovered_before_its_earlier_one(tmp_path):
    # A cluster rank: its scratch run (outer journal) holds the trace a measurement
    # (inner journal) drains into; the inner one must be undone first, as on exit.
    keep_to = tmp_path / "kept"
    _killed(f"""
        from pathlib import Path
        from jitterscope import journal
        outer = journal.Journal("rank")
        d = outer.scratch_dir("js-test-", {str(tmp_path)!r}, keep="run", keep_to={str(keep_to)!r})
        (d / "run").mkdir(); (d / "run" / "trace").write_text("1")
        inner = journal.Journal("measure")
        inner.set_file(d / "run" / "trace", "0")
    """)
    journal.recover_stale()
    assert (keep_to / "trace").read_text() == "1"


def test_a_journal_with_changes_this_version_does_not_know_is_left_whole(tmp_path):
    knob = tmp_path / "knob"
    knob.write_text("1")
    _killed(f"""
        from pathlib import Path
        from jitterscope import journal
        journal.UNDO["from_the_future"] = lambda e: None   # a newer jitterscope's kind of change
        j = journal.Journal("newer")
        j.set_file({str(knob)!r}, "0")
        j.begin("from_the_future", path="somewhere")
    """)
    undone = journal.recover_stale()
    assert [e["result"] for e in undone] == ["failed"] and "from_the_future" in undone[0]["message"]
    assert knob.read_text() == "0"  # nothing undone halfway ...
    assert len(journal.stale_journals()) == 1  # ... and the journal kept for a version that knows it


def test_concurrent_recoveries_never_fail_on_a_journal_the_other_deleted(tmp_path):
    knobs = [tmp_path / f"knob{i}" for i in range(8)]
    for k in knobs:
        k.write_text("1")
        _killed(f"""
            from jitterscope import journal
            journal.Journal("victim").set_file({str(k)!r}, "0")
        """)
    code = "from jitterscope import journal; journal.recover_stale()"
    procs = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True) for _ in range(4)]
    errs = [p.communicate(timeout=60)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    assert all(k.read_text() == "1" for k in knobs) and journal.stale_journals() == []


def test_the_next_command_says_one_line_per_killed_run_and_one_per_failure(tmp_path, capsys):
    from jitterscope.cli import main

    knobs = [tmp_path / f"knob{i}" for i in range(5)]
    for k in knobs:
        k.write_text("1")
    locked = tmp_path / "locked" / "knob"  # its directory is gone at undo time: could not undo
    locked.parent.mkdir()
    locked.write_text("1")
    code = textwrap.dedent(f"""
        import os
        from jitterscope import journal
        j = journal.Journal("doe")
        for k in {[str(k) for k in knobs]!r}:
            j.set_file(k, "0")
        j.set_file({str(locked)!r}, "0")
        os._exit(9)
    """)
    subprocess.run([sys.executable, "-c", code], check=False)
    locked.unlink()
    locked.parent.rmdir()
    assert main(["report", str(tmp_path / "no-such-run")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3, err  # the count, the one failure, the command's own error
    assert err[0].startswith("jitterscope: put back what an interrupted doe (pid ") and err[0].endswith(": 5 restored")
    assert err[1].startswith("jitterscope: could not undo: ") and str(locked) in err[1]
    assert "no-such-run" in err[2]
    assert all(k.read_text() == "1" for k in knobs)
