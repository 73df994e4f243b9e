"""The parser on raw pages recorded from a real kernel (tests/fixtures/trace/).

Cross-checked against the kernel's own count of events read (stats.json) and
against a deliberately simple pure-Python page decoder written here.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from jitterscope.tracing.parse import parse_trace

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "trace"

try:
    from jitterscope.native_bin import native_bin

    native_bin("jitterscope-traceparse")
    MISSING = None
except Exception as err:  # noqa: BLE001
    MISSING = str(err)

pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"jitterscope-traceparse not built: {MISSING}")


def reference_events(trace_dir: Path, cpu: int) -> list[tuple[int, int]]:
    """(timestamp, event id) of every data event, decoded the slow, obvious way."""
    hp = json.loads((trace_dir / "formats.json").read_text())["header_page"]
    data_off, data_size = hp["data"]
    page_size = data_off + data_size
    raw = (trace_dir / f"cpu{cpu}.raw").read_bytes()
    out = []
    for p in range(0, len(raw) - page_size + 1, page_size):
        ts, commit = struct.unpack_from("<QQ", raw, p)
        size = commit & ((1 << 27) - 1)
        data = raw[p + data_off : p + data_off + size]
        i = 0
        while i + 4 <= len(data):
            (hdr,) = struct.unpack_from("<I", data, i)
            tl, delta = hdr & 31, hdr >> 5
            if tl == 29:
                if delta == 0:
                    break
                i += 4 + struct.unpack_from("<I", data, i + 4)[0]
            elif tl == 30:
                ts += (struct.unpack_from("<I", data, i + 4)[0] << 27) | delta
                i += 8
            elif tl == 31:
                ts = (struct.unpack_from("<I", data, i + 4)[0] << 27) | delta
                i += 8
            elif tl == 0:
                ln = struct.unpack_from("<I", data, i + 4)[0]
                ts += delta
                out.append((ts, struct.unpack_from("<H", data, i + 8)[0]))
                i += 4 + ((ln + 3) & ~3)
            else:
                ts += delta
                out.append((ts, struct.unpack_from("<H", data, i + 4)[0]))
                i += 4 + tl * 4
    return out


def test_fixture_events_match_kernel_count_and_reference_decoder() -> None:
    td = parse_trace(FIXTURE)
    stats = json.loads((FIXTURE / "stats.json").read_text())
    cpu = int(next(iter(stats)))
    ref = reference_events(FIXTURE, cpu)
    assert td.n_events == stats[str(cpu)]["read_events"] == len(ref)
    assert td.lost_events == 0
    # every local_timer interval starts at a local_timer_entry event's timestamp
    roles = {
        int(f[1]): (f[2], f[3])
        for f in (line.split() for line in (FIXTURE / "events.txt").read_text().splitlines())
        if f and f[0] == "event"
    }
    entry_id = next(i for i, r in roles.items() if r == ("vec_entry", "local_timer"))
    ref_starts = sorted(ts for ts, eid in ref if eid == entry_id)
    act = td.activity.to_pylist()
    got = sorted(r["start_tsc"] for r in act if r["kind"] == "irq" and r["name"] == "local_timer" and not r["clipped"])
    assert ref_starts and got == ref_starts[: len(got)] and len(ref_starts) - len(got) <= 1


def test_fixture_segments_partition_the_capture_window() -> None:
    td = parse_trace(FIXTURE)
    seg = td.segments
    win = td.window
    assert win is not None
    assert len(seg) > 0 and np.all(seg["end_tsc"] > seg["start_tsc"])
    assert np.all(seg["start_tsc"][1:] == seg["end_tsc"][:-1])  # no gaps: nothing was lost
    assert seg["start_tsc"][0] <= win[0] and seg["end_tsc"][-1] >= win[1]
    kinds = np.array(td.activity.column("kind").to_pylist())
    assert set(kinds[seg["owner"]]) <= {"thread", "irq", "softirq", "nmi"}
    assert {"thread", "irq", "softirq", "timer"} <= set(kinds)
    names = td.activity.column("name").to_pylist()
    # function pointers were named from the saved symbols, not printed as addresses
    timers = {n for n, k in zip(names, kinds) if k == "timer"}
    assert timers and not any(n.startswith("0x") for n in timers)
    # the session measured the TSC rate from its markers
    assert td.tsc_hz and 1e8 < td.tsc_hz < 1e10


def test_fixture_reanalysis_without_symbols_names_addresses(tmp_path: Path) -> None:
    d = tmp_path / "trace"
    shutil.copytree(FIXTURE, d)
    (d / "symbols.txt").unlink()
    td = parse_trace(d)
    kinds = td.activity.column("kind").to_pylist()
    names = td.activity.column("name").to_pylist()
    assert all(n.startswith("0x") for n, k in zip(names, kinds) if k == "timer")
