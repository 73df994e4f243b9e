"""The probe's binary output format, mirrored from native/probe_records.h.

A file is one 64-byte header then 24-byte detour records.  The dtypes here must
match the C structs exactly; tests/integration/test_probe_layout.py compares
them with what `jitterscope-probe --layout` reports from the compiler.
"""

from __future__ import annotations

import numpy as np

MAGIC = b"JSPROBE\0"
VERSION = 1
FLAG_COMPLETE = 1  # JS_FILE_COMPLETE: the probe finished the file cleanly
# native/probe.c names each probe thread js-probe/<cpu>: the attribution knows the probe's own time by it.
THREAD_COMM_PREFIX = "js-probe/"
WRITER_COMM = "js-probe-writer"  # and its writer thread so (prctl PR_SET_NAME)

# struct js_file_header
HEADER_DTYPE = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("header_size", "<u4"),
        ("record_size", "<u4"),
        ("flags", "<u4"),
        ("tsc_hz", "<u8"),
        ("t0_tsc", "<u8"),
        ("n_records", "<u8"),
        ("dropped", "<u8"),
        ("reserved", "<u8", (1,)),
    ]
)

# struct js_detour
DETOUR_DTYPE = np.dtype(
    [
        ("cpu", "<u4"),
        ("flags", "<u4"),
        ("start_tsc", "<u8"),
        ("duration_tsc", "<u8"),
    ]
)

# The C struct names, for the layout comparison.
STRUCTS: dict[str, np.dtype] = {"js_file_header": HEADER_DTYPE, "js_detour": DETOUR_DTYPE}


def layout(dtype: np.dtype) -> dict[str, dict[str, int]]:
    """{field: {offset, size}} in the shape `jitterscope-probe --layout` prints."""
    assert dtype.fields is not None
    return {name: {"offset": int(off), "size": int(dt.itemsize)} for name, (dt, off, *_) in dtype.fields.items()}
