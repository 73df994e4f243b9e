"""The parser's output records (trace_records.h) agree with the numpy dtypes in records.py."""

from __future__ import annotations

import json
import subprocess

from jitterscope.native_bin import native_bin
from jitterscope.tracing import records


def layout() -> dict:
    out = subprocess.run(
        [str(native_bin("jitterscope-traceparse")), "--layout"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    return json.loads(out)


def test_record_layouts_match_numpy_dtypes() -> None:
    lay = layout()
    for struct, dtype in (
        ("js_activity", records.ACTIVITY_DTYPE),
        ("js_segment", records.SEGMENT_DTYPE),
        ("js_piece", records.PIECE_DTYPE),
    ):
        assert lay[struct]["size"] == dtype.itemsize, struct
        assert set(lay[struct]["fields"]) == set(dtype.names), struct
        for name, (offset, size) in lay[struct]["fields"].items():
            assert dtype.fields[name][1] == offset, f"{struct}.{name} offset"
            assert dtype.fields[name][0].itemsize == size, f"{struct}.{name} size"


def test_kind_codes_and_flags_match() -> None:
    lay = layout()
    assert {k: i for i, k in enumerate(records.KINDS)} == lay["kinds"]
    assert lay["flags"] == {"clipped_start": records.CLIPPED_START, "clipped_end": records.CLIPPED_END}
    assert lay["no_container"] == records.NO_CONTAINER
    assert records.CONTAINER_DTYPE.itemsize == 4
