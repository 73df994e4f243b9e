"""tracing/instances.py: a drain record's temporary, left by a jitterscope killed while writing it, is removed
by the next trace session's clean-up (no later write of that name would: the name holds the dead pid)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jitterscope.tracing import instances


def _dead_pid() -> int:
    pid = 4_000_000
    while Path(f"/proc/{pid}").exists():
        pid -= 1
    return pid


def test_a_killed_writers_temporary_goes_and_a_live_ones_stays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    records = tmp_path / "records"
    records.mkdir()
    monkeypatch.setattr(instances, "DRAIN_RECORDS", records)
    dead = _dead_pid()
    left = records / f".jitterscope-{dead}.{dead}.tmp.json"  # as atomic.temporary_name makes it
    live = records / f".jitterscope-{os.getpid()}.{os.getpid()}.tmp.json"
    kept = records / f"jitterscope-{os.getpid()}.json"
    for p in (left, live, kept):
        p.write_text("")
    (tmp_path / "tracefs" / "instances").mkdir(parents=True)
    assert instances.clean_stale_instances(tmp_path / "tracefs") == []
    assert not left.exists() and live.exists() and kept.exists()
