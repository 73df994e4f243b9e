"""Parquet files of one schema joined into one file without decoding or encoding a row.

The analysis's worker processes each encode their CPU's activity rows as a Parquet file of their own
(so the encoding runs on every core); the analysing process then copies their column chunks one
after another into the run's `activity.parquet` and writes one footer listing every row group, the
offsets in it moved to where the chunks now lie.  The footer is Thrift's compact protocol
(parquet-format's FileMetaData); it is read into a generic tree (field id, type, value), so whatever a
writer puts there passes through unchanged except the few offsets and counts rewritten here.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Union

MAGIC = b"PAR1"

# compact protocol types
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)

Value = Union[int, float, bytes, bool, "Struct", "Seq", "Dict"]


@dataclass
class Struct:
    fields: list[tuple[int, int, Value]]  # (field id, type, value) in the order read

    def get(self, fid: int) -> Value | None:
        return next((v for f, _, v in self.fields if f == fid), None)

    def set(self, fid: int, value: Value) -> None:
        self.fields = [(f, t, value if f == fid else v) for f, t, v in self.fields]


@dataclass
class Seq:
    etype: int
    items: list[Value]
    is_set: bool = False


@dataclass
class Dict:
    ktype: int
    vtype: int
    items: list[tuple[Value, Value]]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = out = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if b < 0x80:
                return out
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, t: int) -> Value:
        if t in (_TRUE, _FALSE):  # a list's bool: one byte
            return self.byte() == _TRUE
        if t == _BYTE:
            return self.byte()
        if t in (_I16, _I32, _I64):
            return self.zigzag()
        if t == _DOUBLE:
            v: float = struct.unpack_from("<d", self.data, self.pos)[0]
            self.pos += 8
            return v
        if t == _BINARY:
            n = self.varint()
            self.pos += n
            return self.data[self.pos - n : self.pos]
        if t in (_LIST, _SET):
            h = self.byte()
            n, et = h >> 4, h & 0x0F
            if n == 15:
                n = self.varint()
            return Seq(et, [self.value(et) for _ in range(n)], t == _SET)
        if t == _MAP:
            n = self.varint()
            if n == 0:
                return Dict(0, 0, [])
            h = self.byte()
            kt, vt = h >> 4, h & 0x0F
            return Dict(kt, vt, [(self.value(kt), self.value(vt)) for _ in range(n)])
        if t == _STRUCT:
            return self.struct()
        raise ValueError(f"Parquet footer: unknown Thrift type {t}")

    def struct(self) -> Struct:
        fields: list[tuple[int, int, Value]] = []
        last = 0
        while True:
            h = self.byte()
            t = h & 0x0F
            if t == _STOP:
                return Struct(fields)
            delta = h >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            fields.append((fid, t, (t == _TRUE) if t in (_TRUE, _FALSE) else self.value(t)))


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _encode(t: int, v: Value, out: bytearray) -> None:
    if t in (_TRUE, _FALSE):
        out.append(_TRUE if v else _FALSE)
    elif t == _BYTE:
        assert isinstance(v, int)
        out.append(v & 0xFF)
    elif t in (_I16, _I32, _I64):
        assert isinstance(v, int)
        out += _zigzag(v)
    elif t == _DOUBLE:
        assert isinstance(v, float)
        out += struct.pack("<d", v)
    elif t == _BINARY:
        assert isinstance(v, bytes)
        out += _varint(len(v)) + v
    elif t in (_LIST, _SET):
        assert isinstance(v, Seq)
        n = len(v.items)
        out.append((n << 4 | v.etype) if n < 15 else (0xF0 | v.etype))
        if n >= 15:
            out += _varint(n)
        for item in v.items:
            _encode(v.etype, item, out)
    elif t == _MAP:
        assert isinstance(v, Dict)
        out += _varint(len(v.items))
        if v.items:
            out.append(v.ktype << 4 | v.vtype)
        for k, x in v.items:
            _encode(v.ktype, k, out)
            _encode(v.vtype, x, out)
    elif t == _STRUCT:
        assert isinstance(v, Struct)
        last = 0
        for fid, ft, fv in v.fields:
            wire = (_TRUE if fv else _FALSE) if ft in (_TRUE, _FALSE) else ft
            if 0 < fid - last <= 15:
                out.append((fid - last) << 4 | wire)
            else:
                out.append(wire)
                out += _zigzag(fid)
            last = fid
            if ft not in (_TRUE, _FALSE):
                _encode(ft, fv, out)
        out.append(_STOP)
    else:
        raise ValueError(f"Parquet footer: unknown Thrift type {t}")


def decode_footer(data: bytes) -> Struct:
    return _Reader(data).struct()


def encode_footer(meta: Struct) -> bytes:
    out = bytearray()
    _encode(_STRUCT, meta, out)
    return bytes(out)


# parquet-format's field ids
_FILE_SCHEMA, _FILE_ROWS, _FILE_GROUPS = 2, 3, 4
_GROUP_COLUMNS, _GROUP_OFFSET, _GROUP_ORDINAL = 1, 5, 7
_CHUNK_OFFSET, _CHUNK_META, _CHUNK_OFFSET_INDEX, _CHUNK_COLUMN_INDEX = 2, 3, 4, 6
_META_DATA_PAGE, _META_INDEX_PAGE, _META_DICT_PAGE, _META_BLOOM = 9, 10, 11, 14


def _shift(s: Struct, fids: Iterable[int], by: int) -> None:
    """Offsets moved by `by`; 0 stays 0: no offset (a file starts with its magic), as Arrow writes the
    deprecated ColumnChunk.file_offset."""
    for fid in fids:
        v = s.get(fid)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            s.set(fid, v + by)


def _moved(group: Struct, by: int, ordinal: int) -> Struct:
    """A row group's entry with every file offset in it moved by `by` bytes."""
    _shift(group, (_GROUP_OFFSET,), by)
    if group.get(_GROUP_ORDINAL) is not None:
        group.set(_GROUP_ORDINAL, ordinal)
    columns = group.get(_GROUP_COLUMNS)
    assert isinstance(columns, Seq)
    for chunk in columns.items:
        assert isinstance(chunk, Struct)
        if chunk.get(1) is not None:
            raise ValueError("Parquet part: a column chunk in another file")
        _shift(chunk, (_CHUNK_OFFSET, _CHUNK_OFFSET_INDEX, _CHUNK_COLUMN_INDEX), by)
        meta = chunk.get(_CHUNK_META)
        if isinstance(meta, Struct):
            _shift(meta, (_META_DATA_PAGE, _META_INDEX_PAGE, _META_DICT_PAGE, _META_BLOOM), by)
    return group


def _footer(f: BinaryIO, size: int, name: str) -> tuple[bytes, int]:
    """A Parquet file's footer and where its row data ends."""
    if size < 12:
        raise ValueError(f"{name}: not a Parquet file ({size} bytes)")
    f.seek(size - 8)
    tail = f.read(8)
    n = int.from_bytes(tail[:4], "little")
    if tail[4:] != MAGIC or n + 12 > size:
        raise ValueError(f"{name}: not a Parquet file (no footer)")
    f.seek(size - 8 - n)
    return f.read(n), size - 8 - n


def _copy(src: BinaryIO, dst: BinaryIO, start: int, end: int) -> None:
    dst.flush()
    while start < end:
        sent = os.sendfile(dst.fileno(), src.fileno(), start, end - start)
        if sent <= 0:
            raise OSError(f"{src.name}: ends before byte {end}")
        start += sent
    dst.seek(0, os.SEEK_END)


class Concat:
    """One Parquet file written from parts of one schema, part after part (`add`), then `close`d with
    the footer of them all.  No part's footer holds a page index or a column chunk elsewhere."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.out.write(MAGIC)
        self.meta: Struct | None = None
        self.groups: list[Value] = []
        self.rows = 0

    def add(self, part: Path) -> None:
        with open(part, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            raw, data_end = _footer(f, size, str(part))
            meta = decode_footer(raw)
            if self.meta is None:
                self.meta = meta
            elif meta.get(_FILE_SCHEMA) != self.meta.get(_FILE_SCHEMA):
                raise ValueError(f"{part}: another schema than the parts before it")
            by = self.out.tell() - len(MAGIC)
            _copy(f, self.out, len(MAGIC), data_end)
        groups = meta.get(_FILE_GROUPS)
        assert isinstance(groups, Seq)
        for g in groups.items:
            assert isinstance(g, Struct)
            self.groups.append(_moved(g, by, len(self.groups)))
        rows = meta.get(_FILE_ROWS)
        assert isinstance(rows, int)
        self.rows += rows

    def close(self) -> None:
        if self.meta is None:
            raise ValueError("no Parquet part to join")
        self.meta.set(_FILE_ROWS, self.rows)
        self.meta.set(_FILE_GROUPS, Seq(_STRUCT, self.groups))
        raw = encode_footer(self.meta)
        self.out.write(raw + len(raw).to_bytes(4, "little") + MAGIC)
        self.out.flush()
