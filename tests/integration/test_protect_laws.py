"""Control-law goldens on replayed counters: the native controller in virtual time (spec 003, 4.8.2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from jitterscope.cli import main

Cap = pytest.CaptureFixture[str]


def _cli(capsys: Cap, *args: str) -> tuple[int, str, str]:
    """The command in this process (the native controller still runs): no interpreter start per case."""
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _replay(tmp_path: Path, capsys: Cap, read_rate: float, write_rate: float, *args: str, ms: int = 100) -> dict:
    """Constant rates (bytes per us) for `ms` ms, replayed; the run's tables and summary."""
    tmp_path.mkdir(exist_ok=True)
    csv = tmp_path / "in.csv"
    rows = ["t_us,read_bytes,write_bytes"] + [
        f"{t},{int(t * read_rate)},{int(t * write_rate)}" for t in range(0, ms * 1000 + 1, 50)
    ]
    csv.write_text("\n".join(rows) + "\n")
    out = tmp_path / "run"
    code, stdout, stderr = _cli(capsys, "protect", "--replay", str(csv), "--out", str(out), "--json", *args)
    assert code == 0, stderr
    return {
        "summary": json.loads(stdout),
        "x": pq.read_table(out / "suspensions.parquet").to_pydict(),
        "s": pq.read_table(out / "samples.parquet").to_pydict(),
    }


@pytest.mark.parametrize("ts, s, duty", [("100us", "900us", 0.10), ("500us", "500us", 0.50)])
def test_persistent_excess_suspends_every_ts_plus_s(tmp_path: Path, capsys: Cap, ts: str, s: str, duty: float):
    r = _replay(tmp_path, capsys, 2000, 0, "--threshold", "1GB/s", "--sample", ts, "--suspend", s)
    starts = np.array(r["x"]["t_ns"])
    assert len(starts) >= 99
    assert set(np.diff(starts).tolist()) == {1_000_000}  # a suspension every Ts + S = 1000 us
    assert set(r["x"]["actual_ns"]) == {int(float(s[:-2]) * 1000)}
    assert r["summary"]["phases"]["protected"]["best_effort"]["duty"] == pytest.approx(duty, abs=0.011)


def test_under_budget_never_suspends(tmp_path: Path, capsys: Cap):
    r = _replay(tmp_path, capsys, 999, 999, "--threshold", "1GB/s")
    assert r["x"]["t_ns"] == [] and len(r["s"]["t_ns"]) == 1000
    assert max(r["s"]["pressure"]) == pytest.approx(0.999)


@pytest.mark.parametrize("read, write", [(2000, 0), (0, 2000)])
def test_a_read_only_and_a_write_only_breach_each_trigger(tmp_path: Path, capsys: Cap, read: int, write: int):
    r = _replay(tmp_path, capsys, read, write, "--threshold", "read=1GB/s,write=1GB/s")
    assert len(r["x"]["t_ns"]) >= 99


def test_a_breach_in_a_direction_not_watched_does_not(tmp_path: Path, capsys: Cap):
    assert _replay(tmp_path, capsys, 0, 5000, "--threshold", "read=1GB/s")["x"]["t_ns"] == []


def test_the_comparison_is_at_or_over(tmp_path: Path, capsys: Cap):
    r = _replay(tmp_path, capsys, 1000, 0, "--threshold", "1GB/s")  # exactly the threshold: 100000 B per 100 us
    assert len(r["x"]["t_ns"]) >= 99
    assert set(r["s"]["pressure"]) == {1.0}


def test_proportional_law_grows_with_the_excess(tmp_path: Path, capsys: Cap):
    lo = _replay(tmp_path / "a", capsys, 1500, 0, "--threshold", "1GB/s", "--law", "proportional", "--gain", "2")
    hi = _replay(tmp_path / "b", capsys, 3000, 0, "--threshold", "1GB/s", "--law", "proportional", "--gain", "2")
    # S = gain x (pressure - 1) x Ts, at least Ts: 100 us at 1.5x, 400 us at 3x
    assert set(lo["x"]["actual_ns"]) == {100_000}
    assert set(hi["x"]["actual_ns"]) == {400_000}
    assert (
        hi["summary"]["phases"]["protected"]["best_effort"]["duty"]
        < lo["summary"]["phases"]["protected"]["best_effort"]["duty"]
    )


def test_replay_with_a_percentage_needs_a_peak(tmp_path: Path, capsys: Cap):
    csv = tmp_path / "in.csv"
    csv.write_text("t_us,read_bytes,write_bytes\n0,0,0\n1000,1,1\n")
    code, _, err = _cli(capsys, "protect", "--replay", str(csv), "--out", str(tmp_path / "r"), "--threshold", "25%")
    assert code == 2 and "needs --peak" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()
