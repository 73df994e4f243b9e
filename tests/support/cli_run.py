"""Run the command line in-process, as a user's shell would: exit code and stderr."""

from __future__ import annotations

import pytest

from jitterscope.cli import main


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """(exit code, stderr) of `jitterscope ARGV`; argparse's own exits included."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = int(e.code or 0)
    return code, capsys.readouterr().err
