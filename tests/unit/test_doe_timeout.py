"""A response command that outlives its timeout is stopped with everything it started (its process
group): `doe run` says every change was undone, and nothing of the command is left running or pinned."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from jitterscope.doe.response import CommandResponse
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal


def _running(marker: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker in (d / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def test_a_timed_out_response_command_is_stopped_with_its_children(tmp_path: Path) -> None:
    marker = f"{os.getpid()}.7"  # sleep accepts a fraction: this one names only this test's sleeps
    cpu = min(os.sched_getaffinity(0))
    r = CommandResponse(f"sleep {marker}1 & sleep {marker}2", [cpu], "wall_time", timeout_s=0.5)
    with Journal("doe test") as j, pytest.raises(JitterscopeError, match="longer than its timeout"):
        r.run(tmp_path, None, j)
    deadline = time.monotonic() + 10
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _running(marker)
