"""Made once per test session, whichever pytest-xdist worker asks first.

A session fixture is made once per worker: what a machine-group test and a spread one both need (LogGOPSim
and its schedules: 15-35 s of compiling and generating under a CPU hog) was made twice, once on the
machine group's worker, the suite's longest path.  Here the first worker to ask makes it, under a lock in
the session's own temporary directory, and every later one reads it back.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def _session_dir(factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    # under xdist each worker's base is pytest-N/popen-gwK, and pytest-N is this session's alone
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]) -> T:
    """`make(directory)`'s value (pickled), made by the first caller in this session; an exception is not kept,
    so a later caller tries again (and skips or fails alike)."""
    root = _session_dir(factory) / f"once-{name}"
    root.mkdir(exist_ok=True)
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        kept = root / "value.pickle"
        if kept.exists():
            value: T = pickle.loads(kept.read_bytes())
            return value
        work = root / "work"
        shutil.rmtree(work, ignore_errors=True)  # what an earlier, failed attempt left
        work.mkdir()
        value = make(work)
        kept.write_bytes(pickle.dumps(value))
        return value
