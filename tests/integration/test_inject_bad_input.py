"""Bad `jitterscope inject` input: one line, exit 2, no traceback, caught before anything starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

BAD = [
    (["--cpu", "4000", "--period", "10ms", "--busy", "1ms"], "CPU 4000 out of range"),
    (["--cpu", "x", "--period", "10ms", "--busy", "1ms"], "malformed --cpu"),
    (["--cpu", "0", "--period", "1ms", "--busy", "2ms"], "must be shorter than the period"),
    (["--cpu", "0", "--period", "1ms", "--busy", "1ms"], "must be shorter than the period"),
    (["--cpu", "0", "--period", "10", "--busy", "1ms"], "needs a unit"),
    (["--cpu", "0", "--period", "10ms", "--busy", "1qs"], "unknown unit"),
    (["--cpu", "0", "--period", "1us", "--busy", "100ns"], "too short"),
    (["--cpu", "0", "--period", "10ms", "--busy", "1ms", "--duration", "1ms"], "at least one period"),
    (["--cpu", "0", "--period", "10ms", "--busy", "1ms", "--name", "a-name-far-too-long"], "1-15 bytes"),
    (["--cpu", "0", "--period", "10ms", "--busy", "1ms", "--priority", "0"], "out of range 1-99"),
    (["--cpu", "0", "--period", "10ms", "--busy", "1ms", "--truth", "/nonexistent/t.csv"], "does not exist"),
    (["--cpu", "0", "--period", "10ms", "--busy", "1ms", "--policy", "rr"], "invalid choice"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[m for _, m in BAD])
def test_bad_input_is_one_line_exit_2(args, message):
    proc = subprocess.run(
        [sys.executable, "-m", "jitterscope", "inject", *args], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
