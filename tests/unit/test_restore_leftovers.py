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
