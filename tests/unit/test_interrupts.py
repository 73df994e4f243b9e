"""A Ctrl-C (or SIGTERM/SIGHUP) anywhere ends a command with one line and exit 130, never an empty message."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterscope import cli
from jitterscope.measure import recover


def _interrupt(*_a: object, **_k: object) -> None:
    raise KeyboardInterrupt


def test_an_interrupt_without_a_message_says_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli.journal, "recover_stale", _interrupt)  # the first thing a command does
    assert cli.main(["report", "/nonexistent"]) == 130
    assert capsys.readouterr().err == "jitterscope: interrupted\n"  # was "jitterscope: " and nothing


def test_an_interrupt_while_building_the_parser_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "build_parser", _interrupt)  # imports every command: seconds under load
    assert cli.main(["restore"]) == 130
    assert capsys.readouterr().err == "jitterscope: interrupted\n"


def test_an_interrupted_analysis_says_the_capture_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "capture.json").write_text("{}")
    monkeypatch.setattr(recover, "_analyze", _interrupt)
    with pytest.raises(KeyboardInterrupt, match=r"raw capture is kept in .*`jitterscope analyze "):
        recover.analyze(tmp_path)


def test_analyze_failing_on_what_was_captured_does_not_advise_analyze_again(tmp_path: Path) -> None:
    """A new user's detours.raw cut mid-record: analyze said "...; `jitterscope analyze u2` finishes the run", the
    command that had just failed.  From analyze, only an interrupt or a full disk is worth another try."""
    from jitterscope.errors import JitterscopeError
    from jitterscope.measure import capture

    bad = JitterscopeError("detours.raw: header says 6532 records, file holds 39")
    got = str(capture.kept(tmp_path, bad, "analysing", by_analyze=True))
    assert got == f"{bad} (while analysing); the raw capture is kept in {tmp_path} as it is"
    assert "`jitterscope analyze" in str(capture.kept(tmp_path, bad, "analysing"))  # from measure: it can finish it
    again = capture.kept(tmp_path, KeyboardInterrupt(), "analysing", by_analyze=True)
    assert isinstance(again, KeyboardInterrupt) and "`jitterscope analyze" in str(again)
    full = capture.kept(tmp_path, OSError(28, "No space left on device"), "analysing", by_analyze=True)
    assert "disk full" in str(full) and "`jitterscope analyze" in str(full)
