"""The machine group's lane goes first.

`make test` runs the machine group (tests/integration/conftest.py) one test at a time on one xdist
worker, and every other test beside it.  The machine group is the suite's longest path: on a 2-CPU host
the spread tests finished minutes before it while their processes took CPU from it.  A spread test
therefore runs at a lower priority (nice 10): it still gets any CPU the machine group leaves, and at
least a tenth of one it wants, so the spread tests still load the host as a busy one would.

Only root can return to its own priority afterwards; without root the tests keep theirs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

SPREAD_NICE = 10  # weight 110 against nice 0's 1024 (kernel/sched/core.c sched_prio_to_weight)


@contextlib.contextmanager
def spread_priority() -> Iterator[None]:
    """This thread, and what it starts, at nice SPREAD_NICE for the duration (root only)."""
    if os.geteuid() != 0:
        yield
        return
    before = os.getpriority(os.PRIO_PROCESS, 0)  # this thread's (Linux nice is per thread)
    os.setpriority(os.PRIO_PROCESS, 0, max(before, SPREAD_NICE))
    try:
        yield
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)
