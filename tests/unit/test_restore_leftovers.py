"""restore removes what a killed run left that no journal names: old mkdtemp-style scratch, not in use."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from jitterscope.commands import restore


def test_old_unjournalled_scratch_is_removed_and_fresh_or_foreign_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(restore.tempfile, "gettempdir", lambda: str(tmp_path))
    old = time.time() - 2 * restore._LEGACY_AGE_S
    names = {
        "jitterscope-calibrate-8aajvxs5": old,
        "jitterscope-weights-k2_9x0ab": old,
        "jitterscope-cluster-r1-abcd1234": old,
        "jitterscope-calibrate-freshone": time.time(),  # may be a live run's: kept
        "someone-elses-calibrate-8aajvxs5": old,
    }  # not ours: kept
    for name, mtime in names.items():
        (tmp_path / name / "share-0.500").mkdir(parents=True)
        os.utime(tmp_path / name, (mtime, mtime))
    said = [o.text for o in restore._legacy_temporaries()]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["jitterscope-calibrate-freshone", "someone-elses-calibrate-8aajvxs5"], left
    assert len(said) == 3 and all("left by a killed jitterscope run" in t for t in said), said


def test_an_instance_already_gone_leaves_no_drain_record_or_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead run's instance removed by someone else first (the watchdog's restore and the next command's
    race; a namespace's tracefs gone): its undo still removes the run's drain record *and* lock file.
    /run/jitterscope/instances held 14 lock files of killed runs on the shared VM."""
    from jitterscope.tracing import instances

    records = tmp_path / "instances"
    monkeypatch.setattr(instances, "DRAIN_RECORDS", records)
    name = "jitterscope-4242"
    for leftover in (instances.drain_record(name), instances.drain_lock(name)):
        records.mkdir(exist_ok=True)
        leftover.touch()
    entry = {"path": str(tmp_path / "tracing" / "instances" / name), "drain_to": str(tmp_path / "run"), "cpus": [1]}
    assert instances.undo_instance(entry).status == "unchanged"  # type: ignore[arg-type]
    assert not list(records.iterdir())
    # and removing one that is gone by the time its lock is held creates none
    assert instances._remove_instance(Path(entry["path"]), None, [1]) == 0
    assert not list(records.iterdir())
