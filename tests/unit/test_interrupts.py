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
