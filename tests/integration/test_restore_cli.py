"""`jitterscope restore` on what a killed process left: one truthful line per item."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.unit.test_journal import _killed


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("JITTERSCOPE_STATE_DIR", str(tmp_path / "state"))


def test_restore_says_one_truthful_line_per_item(tmp_path):
    ok, back, bad = tmp_path / "ok", tmp_path / "back", tmp_path / "bad"
    ok.write_text("1")
    back.write_text("1")
    bad.write_text("1")
    _killed(f"""
        from pathlib import Path
        from jitterscope import journal
        j = journal.Journal("victim")
        for p in ({str(ok)!r}, {str(back)!r}, {str(bad)!r}):
            j.set_file(p, "0")
        Path({str(back)!r}).write_text("1")   # already back as found
        Path({str(bad)!r}).unlink(); Path({str(bad)!r}).mkdir()   # cannot be written back
    """)
    proc = subprocess.run(
        [sys.executable, "-m", "jitterscope", "restore"],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdicts = {}
    for ln in proc.stdout.splitlines():  # (restore may also clean things other runs left)
        for p in (ok, back, bad):
            if f"{p} " in ln or ln.endswith(str(p)) or f"{p}:" in ln:
                assert p not in verdicts, f"two lines for {p}: {proc.stdout}"
                verdicts[p] = ln.split(":")[0]
    assert verdicts == {ok: "restored", back: "already as found", bad: "could not undo"}, proc.stdout
    assert ok.read_text() == "1"
