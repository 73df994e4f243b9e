"""--priority across every command that takes it: 0 (SCHED_OTHER's) and 100 are refused in one line with exit 2,
never read as 'no priority' or as the default (protect once ran fifo:0 at 50 and recorded 50)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jitterscope.errors import UsageError
from jitterscope.options import parse_priority
from tests.support import cli_batch
from tests.support.lanes import spread_priority

ROOT = Path(__file__).resolve().parents[2]

USERS = [
    ("measure", "--duration", "1s"),
    ("monitor",),
    ("tune", "verify"),
    ("protect", "--critical-cmd", "true", "--best-effort-cmd", "true"),
    ("protect", "calibrate", "--critical-cmd", "true", "--out", "{tmp}/cal.json"),
    ("pipeline", "run", f"{ROOT}/examples/pipeline/appendix.yaml"),
]
PRIOS = ["fifo:0"]
# also run as `python -m jitterscope`: the real entry point's start-up and exit path
REAL = {"monitor fifo:0"}


def case(cmd: tuple[str, ...], prio: str) -> str:
    return f"{' '.join(cmd[:2])} {prio}"


@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    """Every command of USERS with every bad priority, through cli.main in one process (tests/support/cli_batch.py),
    the REAL ones also as the real tool beside it.  A command that wrongly accepted the priority would change the
    machine: they all keep their journals in a state directory of their own, and what one did is undone after."""
    tmp = tmp_path_factory.mktemp("priority")
    cases = [
        (case(cmd, prio), [*(c.format(tmp=tmp) for c in cmd), "--priority", prio]) for cmd in USERS for prio in PRIOS
    ]
    env = {**os.environ, "JITTERSCOPE_STATE_DIR": str(tmp / "state")}
    try:
        with spread_priority():
            yield cli_batch.batch_and_real(cases, REAL, tmp, env)
    finally:  # a command that wrongly got as far as changing something is undone here, not left to others
        subprocess.run([sys.executable, "-m", "jitterscope", "restore"], env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize(
    "name",
    [case(cmd, prio) for cmd in USERS for prio in PRIOS] + [name + cli_batch.REAL for name in sorted(REAL)],
)
def test_out_of_range_priority_is_refused(refusals, name):
    code, stderr, _ = refusals[name]
    assert code == 2, (code, stderr)
    err = stderr.strip().splitlines()
    assert len(err) == 1 and "--priority" in err[0] and "1-99" in err[0], stderr


def test_the_range_itself():
    assert parse_priority("fifo:1") == 1 and parse_priority("99") == 99 and parse_priority(None) is None
    for bad in ("fifo:0", "0", "100", "fifo:-1", "rr:5"):
        with pytest.raises(UsageError):
            parse_priority(bad)
