"""A reader that stops reading (`jitterscope ... | head`) ends a command quietly with exit 0; a broken pipe
to one of jitterscope's own children is a failure, never that quiet success."""

from __future__ import annotations

import pytest

from jitterscope import cli


def _child_pipe_broke(*_a: object, **_k: object) -> None:
    raise BrokenPipeError(32, "Broken pipe")


def test_a_broken_pipe_that_is_not_stdout_is_not_success(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli.journal, "recover_stale", _child_pipe_broke)  # the first thing a command does
    with pytest.raises(BrokenPipeError):  # stdout (pytest's capture) still has its reader
        cli.main(["report", "/nonexistent"])
