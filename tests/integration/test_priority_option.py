"""--priority across every command that takes it: 0 (SCHED_OTHER's) and 100 are refused in one line with exit 2,
never read as 'no priority' or as the default (protect once ran fifo:0 at 50 and recorded 50)."""

from __future__ import annotations

import pytest

from jitterscope.errors import UsageError
from jitterscope.options import parse_priority
from tests.integration.conftest import jitterscope

USERS = [
    ("measure", "--duration", "1s"),
    ("monitor",),
    ("tune", "verify"),
    ("protect", "--critical-cmd", "true", "--best-effort-cmd", "true"),
    ("protect", "calibrate", "--critical-cmd", "true", "--out", "{tmp}/cal.json"),
    ("pipeline", "run", "examples/pipeline/appendix.yaml"),
]


@pytest.mark.parametrize("cmd", USERS, ids=lambda c: " ".join(c[:2]))
@pytest.mark.parametrize("prio", ["fifo:0"])
def test_out_of_range_priority_is_refused(cmd, prio, tmp_path):
    p = jitterscope(*(c.format(tmp=tmp_path) for c in cmd), "--priority", prio)
    assert p.returncode == 2, (p.returncode, p.stderr)
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "--priority" in err[0] and "1-99" in err[0], p.stderr


def test_the_range_itself():
    assert parse_priority("fifo:1") == 1 and parse_priority("99") == 99 and parse_priority(None) is None
    for bad in ("fifo:0", "0", "100", "fifo:-1", "rr:5"):
        with pytest.raises(UsageError):
            parse_priority(bad)
