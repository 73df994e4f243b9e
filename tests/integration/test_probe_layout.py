"""The C structs and the numpy dtypes describe the same bytes.

The probe reports sizeof/offsetof as the compiler laid them out; any drift
between probe_records.h and probe_format.py fails here, not in a misread run.
"""

from __future__ import annotations

import json
import subprocess

from jitterscope.measure.probe_format import FLAG_COMPLETE, MAGIC, STRUCTS, VERSION, layout
from jitterscope.native_bin import native_bin


def _c_layout() -> dict:
    out = subprocess.run(
        [str(native_bin("jitterscope-probe")), "--layout"], capture_output=True, text=True, timeout=10, check=True
    )
    return json.loads(out.stdout)


def test_every_struct_matches_its_dtype():
    c = _c_layout()
    assert set(c["structs"]) == set(STRUCTS)
    for name, dtype in STRUCTS.items():
        assert c["structs"][name]["size"] == dtype.itemsize, name
        assert c["structs"][name]["fields"] == layout(dtype), name


def test_constants_match():
    c = _c_layout()
    assert c["magic"].encode() + b"\0" == MAGIC
    assert c["version"] == VERSION
    assert c["flags"]["JS_FILE_COMPLETE"] == FLAG_COMPLETE
    assert c["structs"]["js_detour"]["size"] == 24
