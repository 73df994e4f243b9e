"""Bad `jitterscope inject` input: one line, exit 2, no traceback, caught before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import cli_batch
from tests.support.lanes import spread_priority

# (case, options, words in the error's line)
BAD = [
    ("cpu-out-of-range", ["--cpu", "4000", "--period", "10ms", "--busy", "1ms"], "CPU 4000 out of range"),
    ("cpu-malformed", ["--cpu", "x", "--period", "10ms", "--busy", "1ms"], "malformed --cpu"),
    ("busy-over-period", ["--cpu", "0", "--period", "1ms", "--busy", "2ms"], "must be shorter than the period"),
    ("busy-is-period", ["--cpu", "0", "--period", "1ms", "--busy", "1ms"], "must be shorter than the period"),
    ("period-without-unit", ["--cpu", "0", "--period", "10", "--busy", "1ms"], "needs a unit"),
    ("busy-unknown-unit", ["--cpu", "0", "--period", "10ms", "--busy", "1qs"], "unknown unit"),
    ("period-too-short", ["--cpu", "0", "--period", "1us", "--busy", "100ns"], "too short"),
    (
        "duration-under-a-period",
        ["--cpu", "0", "--period", "10ms", "--busy", "1ms", "--duration", "1ms"],
        "at least one period",
    ),
    (
        "name-too-long",
        ["--cpu", "0", "--period", "10ms", "--busy", "1ms", "--name", "a-name-far-too-long"],
        "1-15 bytes",
    ),
    ("priority-0", ["--cpu", "0", "--period", "10ms", "--busy", "1ms", "--priority", "0"], "out of range 1-99"),
    (
        "truth-in-no-directory",
        ["--cpu", "0", "--period", "10ms", "--busy", "1ms", "--truth", "/nonexistent/t.csv"],
        "does not exist",
    ),
    ("policy-rr", ["--cpu", "0", "--period", "10ms", "--busy", "1ms", "--policy", "rr"], "invalid choice"),
]
# also run as `python -m jitterscope`: the real entry point's start-up and exit path
REAL = {"cpu-out-of-range"}


@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    """Every case through cli.main in one process (tests/support/cli_batch.py), the REAL ones also as the real
    tool beside it.  An injector wrongly started would load a CPU: the commands keep their journals in a state
    directory of their own, and what one left is undone after."""
    tmp = tmp_path_factory.mktemp("inject")
    env = {**os.environ, "JITTERSCOPE_STATE_DIR": str(tmp / "state")}
    try:
        with spread_priority():
            yield cli_batch.batch_and_real([(name, ["inject", *args]) for name, args, _ in BAD], REAL, tmp, env)
    finally:
        subprocess.run([sys.executable, "-m", "jitterscope", "restore"], env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize("name", [name for name, _, _ in BAD] + [name + cli_batch.REAL for name in sorted(REAL)])
def test_bad_input_is_one_line_exit_2(refusals, name):
    code, stderr, stdout = refusals[name]
    message = {case: message for case, _, message in BAD}[name.removesuffix(cli_batch.REAL)]
    assert code == 2, (code, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], stderr
    assert "Traceback" not in stderr and stdout == ""
