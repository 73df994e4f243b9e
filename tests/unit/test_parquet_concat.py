"""Parquet parts joined without re-encoding read back as the parts one after another, and their
footer passes through the Thrift codec unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jitterscope.measure import parquet_concat as P
from jitterscope.measure import stream


def _rows(rng: np.random.Generator, n: int, cpu: int) -> pa.Table:
    start = np.sort(rng.integers(0, 10**9, n)).astype(np.int64)
    return pa.table(
        [
            pa.array(np.full(n, cpu, np.int32)),
            pa.array(start),
            pa.array(start + rng.integers(0, 10**4, n)),
            stream._dict_column(rng.integers(0, 6, n), stream._KIND_DICT),
            stream._dict_column(rng.integers(0, 3, n), pa.array(["python", "kworker/1:0", "ksoftirqd/1"])),
            pa.array(rng.integers(0, 3, n).astype(np.int16)),
            stream._dict_column(rng.integers(0, 2, n), pa.array(["", "hrtimer"])),
        ],
        schema=stream.WRITE_SCHEMA,
    )


def _part(path: Path, tables: list[pa.Table]) -> Path:
    w = stream._parquet_writer(path, stream.COMPRESSION)
    for t in tables:
        w.write_table(t)
    w.close()
    return path


def _footer(data: bytes) -> bytes:
    n = int.from_bytes(data[-8:-4], "little")
    return data[-8 - n : -8]


def test_footer_round_trips_byte_for_byte(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    raw = _part(tmp_path / "a.parquet", [_rows(rng, 100, 1), _rows(rng, 7, 1)]).read_bytes()
    assert P.encode_footer(P.decode_footer(_footer(raw))) == _footer(raw)


def test_parts_read_back_in_order_and_equal_one_writer(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    chunks = [[_rows(rng, 300, 1), _rows(rng, 20, 1)], [], [_rows(rng, 1, 4)], [_rows(rng, 50, 7)] * 3]
    parts = [_part(tmp_path / f"p{i}.parquet", c) for i, c in enumerate(chunks)]
    with open(tmp_path / "joined.parquet", "wb") as f:
        joined = P.Concat(f)
        for p in parts:
            joined.add(p)
        joined.close()
    one = _part(tmp_path / "one.parquet", [t for c in chunks for t in c])  # every chunk through one writer
    got = pq.read_table(tmp_path / "joined.parquet")
    assert got.equals(pa.concat_tables(pq.read_table(p) for p in parts))
    assert got.num_rows == 300 + 20 + 1 + 150
    assert pq.ParquetFile(tmp_path / "joined.parquet").metadata.num_row_groups == 6
    # the same row groups one writer would have written, byte for byte, footer included
    assert (tmp_path / "joined.parquet").read_bytes() == one.read_bytes()
    meta = pq.ParquetFile(tmp_path / "joined.parquet").metadata
    assert (
        meta.row_group(5).column(1).statistics.min
        == pq.ParquetFile(parts[3]).metadata.row_group(2).column(1).statistics.min
    )


def test_another_schema_is_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    a = _part(tmp_path / "a.parquet", [_rows(rng, 5, 1)])
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "b.parquet")
    with open(tmp_path / "out.parquet", "wb") as f:
        joined = P.Concat(f)
        joined.add(a)
        with pytest.raises(ValueError, match="another schema"):
            joined.add(tmp_path / "b.parquet")


def test_not_parquet_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.parquet").write_bytes(b"PAR1 not really")
    with open(tmp_path / "out.parquet", "wb") as f, pytest.raises(ValueError, match="not a Parquet file"):
        P.Concat(f).add(tmp_path / "x.parquet")


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 2**31 - 1, -(2**31), 2**62, -(2**63)])
def test_integers_keep_their_value(value: int) -> None:
    meta = P.Struct([(1, 6, value), (3, 5, 7), (40, 8, b"x" * 200), (41, 1, True), (42, 2, False), (43, 7, 0.5)])
    back = P.decode_footer(P.encode_footer(meta))
    assert back == meta
