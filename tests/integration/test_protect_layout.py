"""The controller's record structs and the report page: C and numpy describe the same bytes."""

from __future__ import annotations

import json
import subprocess

from jitterscope.native_bin import native_bin
from jitterscope.protect import records


def _c_layout() -> dict:
    out = subprocess.run(
        [str(native_bin("jitterscope-protect")), "--layout"], capture_output=True, text=True, timeout=10, check=True
    )
    return json.loads(out.stdout)


def test_every_struct_matches_its_dtype():
    c = _c_layout()
    assert set(c["structs"]) == set(records.STRUCTS)
    for name, dtype in records.STRUCTS.items():
        assert c["structs"][name]["size"] == dtype.itemsize, name
        assert c["structs"][name]["fields"] == records.layout(dtype), name


def test_constants_match():
    c = _c_layout()
    assert c["magic"].encode() + b"\0" == records.MAGIC and c["version"] == records.VERSION
    assert c["report_magic"].encode() + b"\0" == records.REPORT_MAGIC
    assert (c["report_version"], c["report_beats"]) == (records.REPORT_VERSION, records.REPORT_BEATS)
    assert c["kinds"] == {
        "JSP_SAMPLE": records.KIND_SAMPLE,
        "JSP_SUSPENSION": records.KIND_SUSPENSION,
        "JSP_BEAT": records.KIND_BEAT,
    }
    f = c["flags"]
    assert (f["JSP_S_ON"], f["JSP_S_WOULD"], f["JSP_S_STALE"], f["JSP_S_NOSIGNAL"], f["JSP_S_EVENT"]) == (
        records.S_ON,
        records.S_WOULD,
        records.S_STALE,
        records.S_NOSIGNAL,
        records.S_EVENT,
    )
    assert (f["JSP_X_CLIPPED"], f["JSP_X_UNCONFIRMED"], f["JSP_X_NOSTOP"]) == (
        records.X_CLIPPED,
        records.X_UNCONFIRMED,
        records.X_NOSTOP,
    )
    assert f["JSP_FILE_COMPLETE"] == records.FLAG_COMPLETE


def test_python_publisher_is_read_by_the_c_side(tmp_path):
    """A page written through the Python API is what jitterscope-synload/chase write: same offsets."""
    from jitterscope.protect.report import ReportPage

    p = tmp_path / "page"
    ReportPage.create(p)
    import os

    os.environ[records.REPORT_ENV] = str(p)
    try:
        pub = ReportPage.attach()
    finally:
        del os.environ[records.REPORT_ENV]
    assert pub is not None
    pub.add(read_bytes=4096, write_bytes=8192)
    pub.set_deadline(2_000_000)
    for i in range(5000):
        pub.beat(1000 + i)
    raw = p.read_bytes()
    page = __import__("numpy").frombuffer(raw, dtype=records.REPORT_DTYPE)[0]
    assert (int(page["read_bytes"]), int(page["write_bytes"]), int(page["ops"])) == (4096, 8192, 1)
    assert int(page["beats"]) == 5000 and int(page["deadline_ns"]) == 2_000_000
    assert int(page["beat"][4999 % records.REPORT_BEATS]["latency_ns"]) == 5999
