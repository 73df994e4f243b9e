"""The controller's binary output and the report page, mirrored from native/protect_records.h
and native/js_report.h.

A controller file is one 64-byte header then 80-byte records (sample, suspension,
heartbeat), told apart by their first field.  The dtypes here must match the C
structs exactly; tests/integration/test_protect_layout.py compares them with what
`jitterscope-protect --layout` reports from the compiler.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import numpy as np

from jitterscope import boundedio
from jitterscope.errors import JitterscopeError

MAGIC = b"JSPROTC\0"
VERSION = 1
FLAG_COMPLETE = 1

KIND_SAMPLE, KIND_SUSPENSION, KIND_BEAT = 1, 2, 3

# jsp_sample.flags
S_ON, S_WOULD, S_STALE, S_NOSIGNAL, S_EVENT = 1, 2, 4, 8, 16
# jsp_suspension.flags
X_CLIPPED, X_UNCONFIRMED, X_NOSTOP = 1, 2, 4
STOP_UNKNOWN = np.iinfo(np.int64).min  # stopped_ns when no report page could tell

HEADER_DTYPE = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("header_size", "<u4"),
        ("record_size", "<u4"),
        ("flags", "<u4"),
        ("t0_ns", "<i8"),
        ("n_records", "<u8"),
        ("dropped", "<u8"),
        ("beats_lost", "<u8"),
        ("reserved", "<u8", (1,)),
    ]
)
_PREFIX = [("kind", "<u2"), ("cpu", "<u2"), ("flags", "<u4"), ("t_ns", "<i8")]
SAMPLE_DTYPE = np.dtype(
    _PREFIX
    + [
        ("window_ns", "<i8"),
        ("read_bytes", "<i8"),
        ("write_bytes", "<i8"),
        ("progress_bytes", "<i8"),
        ("cpu_ns", "<i8"),
        ("metric", "<i8"),
        ("pressure_ppm", "<i8"),
        ("suspend_ns", "<i8"),
    ]
)
SUSPENSION_DTYPE = np.dtype(
    _PREFIX
    + [
        ("requested_ns", "<i8"),
        ("stopped_ns", "<i8"),
        ("end_ns", "<i8"),
        ("resumed_ns", "<i8"),
        ("issue_ns", "<i8"),
        ("reserved", "<i8", (3,)),
    ]
)
BEAT_DTYPE = np.dtype(_PREFIX + [("latency_ns", "<i8"), ("seq", "<i8"), ("reserved", "<i8", (6,))])

# js_report.h
REPORT_MAGIC = b"JSREPRT\0"
REPORT_VERSION = 1
REPORT_BEATS = 4096
REPORT_ENV = "JITTERSCOPE_REPORT"
JS_BEAT_DTYPE = np.dtype([("end_ns", "<i8"), ("latency_ns", "<i8")])
REPORT_DTYPE = np.dtype(
    {
        "names": [
            "magic",
            "version",
            "size",
            "pid",
            "flags",
            "deadline_ns",
            "reserved",
            "read_bytes",
            "write_bytes",
            "ops",
            "last_ns",
            "reserved2",
            "beats",
            "reserved3",
            "beat",
        ],
        "formats": [
            "S8",
            "<u4",
            "<u4",
            "<i4",
            "<u4",
            "<i8",
            ("<u8", (4,)),
            "<u8",
            "<u8",
            "<u8",
            "<i8",
            ("<u8", (4,)),
            "<u8",
            ("<u8", (7,)),
            (JS_BEAT_DTYPE, (REPORT_BEATS,)),
        ],
        "offsets": [0, 8, 12, 16, 20, 24, 32, 64, 72, 80, 88, 96, 128, 136, 192],
        "itemsize": 192 + 16 * REPORT_BEATS,
    }
)

STRUCTS: dict[str, np.dtype] = {
    "jsp_header": HEADER_DTYPE,
    "jsp_sample": SAMPLE_DTYPE,
    "jsp_suspension": SUSPENSION_DTYPE,
    "jsp_beat": BEAT_DTYPE,
    "js_report_page": REPORT_DTYPE,
    "js_beat": JS_BEAT_DTYPE,
}


def layout(dtype: np.dtype) -> dict[str, dict[str, int]]:
    """{field: {offset, size}} in the shape `jitterscope-protect --layout` prints."""
    assert dtype.fields is not None
    return {name: {"offset": int(off), "size": int(dt.itemsize)} for name, (dt, off, *_) in dtype.fields.items()}


class Header(TypedDict):
    """A controller file's header, checked, and what the file holds."""

    flags: int
    t0_ns: int
    n_records: int  # as the controller counted them
    dropped: int
    beats_lost: int
    complete: bool  # the controller finished the file
    records_in_file: int  # whole records present (a killed controller's file is read up to its last)


def read_header(path: Path) -> Header:
    """The checked header of a controller file (one-line JitterscopeError if it is not one)."""
    size = boundedio.check_file(path, "controller records", boundedio.table_cap()).st_size
    if size < HEADER_DTYPE.itemsize:
        raise JitterscopeError(f"{path}: truncated controller records ({size} bytes, shorter than the header)")
    h = np.fromfile(path, dtype=HEADER_DTYPE, count=1)[0]
    if bytes(h["magic"]).ljust(8, b"\0") != MAGIC or int(h["version"]) != VERSION:
        raise JitterscopeError(f"{path}: not a jitterscope-protect record file (magic/version)")
    if int(h["header_size"]) != HEADER_DTYPE.itemsize or int(h["record_size"]) != SAMPLE_DTYPE.itemsize:
        raise JitterscopeError(
            f"{path}: corrupt record file (header {int(h['header_size'])} B, record {int(h['record_size'])} B)"
        )
    flags = int(h["flags"])
    return {
        "flags": flags,
        "t0_ns": int(h["t0_ns"]),
        "n_records": int(h["n_records"]),
        "dropped": int(h["dropped"]),
        "beats_lost": int(h["beats_lost"]),
        "complete": bool(flags & FLAG_COMPLETE),
        "records_in_file": (size - HEADER_DTYPE.itemsize) // SAMPLE_DTYPE.itemsize,
    }


def read_records(path: Path) -> tuple[Header, dict[str, np.ndarray]]:
    """(header, {"samples", "suspensions", "beats"}) from a controller file.

    A file the controller did not finish (it was killed) is read up to its last whole record."""
    header = read_header(path)
    n = header["records_in_file"]
    raw = np.fromfile(path, dtype=np.uint8, offset=HEADER_DTYPE.itemsize, count=n * SAMPLE_DTYPE.itemsize).reshape(
        n, SAMPLE_DTYPE.itemsize
    )
    kinds = raw[:, 0].astype(np.uint16) | (raw[:, 1].astype(np.uint16) << 8)
    out = {}
    for name, kind, dtype in (
        ("samples", KIND_SAMPLE, SAMPLE_DTYPE),
        ("suspensions", KIND_SUSPENSION, SUSPENSION_DTYPE),
        ("beats", KIND_BEAT, BEAT_DTYPE),
    ):
        out[name] = np.ascontiguousarray(raw[kinds == kind]).view(dtype).reshape(-1)
    bad = int(np.count_nonzero(~np.isin(kinds, (KIND_SAMPLE, KIND_SUSPENSION, KIND_BEAT))))
    if bad:
        raise JitterscopeError(f"{path}: corrupt record file ({bad} records of unknown kind)")
    return header, out
