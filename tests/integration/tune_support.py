"""What the tune tests share: taking turns with other sessions that run them on this machine."""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Iterator

import pytest

LOCK = "/run/jitterscope-test-tune.lock"


@contextlib.contextmanager
def one_session_at_a_time(wait_s: float = 600) -> Iterator[None]:
    """These tests route one IRQ and set machine-wide knobs: two sessions running them at once (a fresh
    clone's `make test` beside this checkout's) would undo each other's changes, so they take turns."""
    with open(LOCK, "a") as fh:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.skip(f"another session has run the tune end-to-end tests for {wait_s:g} s ({LOCK})")
                time.sleep(1.0)
        yield
