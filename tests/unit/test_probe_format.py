"""Reading the probe's binary output and the injector's truth file.

Files are built here with the dtypes of probe_format (the layout test checks
those against the C structs), then damaged the ways a crash or a bad copy would.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterscope.errors import JitterscopeError
from jitterscope.measure.inject import period_stats, read_truth
from jitterscope.measure.probe import read_detours, read_header
from jitterscope.measure.probe_format import DETOUR_DTYPE, FLAG_COMPLETE, HEADER_DTYPE, MAGIC, VERSION


def _write(
    path: Path,
    records: np.ndarray,
    *,
    complete: bool = True,
    n_records: int | None = None,
    magic: bytes = MAGIC,
    version: int = VERSION,
    extra: bytes = b"",
) -> Path:
    h = np.zeros(1, dtype=HEADER_DTYPE)
    h["magic"], h["version"] = magic, version
    h["header_size"], h["record_size"] = HEADER_DTYPE.itemsize, DETOUR_DTYPE.itemsize
    h["flags"] = FLAG_COMPLETE if complete else 0
    h["t0_tsc"], h["tsc_hz"] = 1000, 2_600_000_000
    h["n_records"] = len(records) if n_records is None else n_records
    path.write_bytes(h.tobytes() + records.tobytes() + extra)
    return path


def _records(n: int) -> np.ndarray:
    r = np.zeros(n, dtype=DETOUR_DTYPE)
    r["cpu"] = np.arange(n) % 2 + 1
    r["start_tsc"] = 10_000 + np.arange(n) * 5000
    r["duration_tsc"] = 2600 + np.arange(n)
    return r


def test_reads_back_what_was_written(tmp_path):
    rec = _records(7)
    got = read_detours(_write(tmp_path / "d.raw", rec))
    assert got.dtype == DETOUR_DTYPE
    np.testing.assert_array_equal(got, rec)
    h = read_header(tmp_path / "d.raw")
    assert h["complete"] and h["t0_tsc"] == 1000 and h["n_records"] == 7


def test_empty_run_gives_empty_array(tmp_path):
    got = read_detours(_write(tmp_path / "d.raw", _records(0)))
    assert len(got) == 0 and got.dtype == DETOUR_DTYPE


@pytest.mark.parametrize(
    "damage, message",
    [
        (dict(extra=b"\x01" * 10), "partial"),  # killed mid-record
        (dict(n_records=9), "header says 9 records"),  # records missing at the end
        (dict(complete=False), "incomplete"),  # probe never finished
        (dict(magic=b"NOTPROBE"), "bad magic"),
        (dict(version=99), "version 99"),
    ],
)
def test_damaged_files_raise_one_clear_error(tmp_path, damage, message):
    path = _write(tmp_path / "d.raw", _records(5), **damage)
    with pytest.raises(JitterscopeError, match=message):
        read_detours(path)


def test_incomplete_file_readable_on_request(tmp_path):
    path = _write(tmp_path / "d.raw", _records(4), complete=False, n_records=0)
    assert len(read_detours(path, allow_incomplete=True)) == 4


def test_shorter_than_header_and_missing(tmp_path):
    (tmp_path / "short.raw").write_bytes(b"JSPROBE\0" + b"\0" * 8)
    with pytest.raises(JitterscopeError, match="truncated"):
        read_detours(tmp_path / "short.raw")
    with pytest.raises(JitterscopeError, match="no such probe output"):
        read_detours(tmp_path / "absent.raw")


TRUTH = """# jitterscope-inject truth v1 tsc_hz=2000000000.000 pid=42 cpu=1 period_ns=10000000 busy_ns=1000000 \
name=jitterscope-inj policy=fifo
start_tsc,end_tsc
{rows}
"""


def test_truth_file_round_trip_and_period(tmp_path):
    hz, period, busy = 2e9, 10_000_000, 1_000_000
    starts = 5_000_000 + np.arange(20) * int(period * hz / 1e9) + np.array([0, 300] * 10)  # 150 ns jitter
    rows = "\n".join(f"{s},{s + int(busy * hz / 1e9)}" for s in starts)
    path = tmp_path / "truth.csv"
    path.write_text(TRUTH.format(rows=rows))
    t = read_truth(path)
    assert len(t) == 20 and t.tsc_hz == hz and t.meta["pid"] == 42 and t.meta["name"] == "jitterscope-inj"
    np.testing.assert_array_equal(t["start_tsc"], starts)
    s = period_stats(t)
    assert s["period_overall_ns"] == pytest.approx(period, abs=20)
    assert s["busy_mean_ns"] == pytest.approx(busy)
    assert s["period_max_dev_ns"] == pytest.approx(150)


def test_truth_file_rejects_other_files(tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(JitterscopeError, match="not a jitterscope-inject truth file"):
        read_truth(tmp_path / "x.csv")
    (tmp_path / "y.csv").write_text(TRUTH.format(rows="12,abc"))
    with pytest.raises(JitterscopeError, match="malformed row"):
        read_truth(tmp_path / "y.csv")
