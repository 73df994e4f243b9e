"""capture.finish drops the raw capture of a complete run in an order a kill cannot break: at every point
between its unlinks the run is either still waiting for analysis with its raw records, or complete (the
kill table's cluster-analysis row once found capture.json beside a deleted detours.raw: 'nothing to rebuild')."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterscope.measure import capture
from jitterscope.measure.recover import is_complete


class Killed(Exception):
    pass


@pytest.mark.parametrize("after", [0, 1, 2])
def test_a_kill_between_the_unlinks_leaves_a_complete_run_or_its_raw_capture(tmp_path, monkeypatch, after):
    for name in (*capture.RAW_FILES, "summary.json", "detours.parquet"):
        (tmp_path / name).write_text("x")
    real = Path.unlink
    done = []

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if len(done) == after:
            raise Killed(self.name)
        done.append(self.name)
        real(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.raises(Killed):
        capture.finish(tmp_path)
    monkeypatch.undo()
    waiting = not is_complete(tmp_path)
    assert waiting == (after == 0), done
    if waiting:
        assert (tmp_path / "detours.raw").exists()


def test_finish_leaves_no_raw_file(tmp_path):
    for name in (*capture.RAW_FILES, "summary.json"):
        (tmp_path / name).write_text("x")
    capture.finish(tmp_path)
    assert is_complete(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
