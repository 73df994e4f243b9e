"""The one TSC-to-nanosecond conversion (measure/tsc.py): rounding and order."""

from __future__ import annotations

import numpy as np

from jitterscope.measure import tsc
from jitterscope.measure.probe_format import DETOUR_DTYPE


def test_back_to_back_detours_never_overlap_by_rounding() -> None:
    # 3 ticks per 2 ns at 1.5 GHz: rounding each duration on its own would make
    # back-to-back detours overlap or leave a gap; rounding both ends cannot.
    hz = 1.5e9
    raw = np.zeros(200, dtype=DETOUR_DTYPE)
    raw["cpu"] = 1
    raw["duration_tsc"] = 1 + np.arange(200) % 7
    raw["start_tsc"] = 1000 + np.concatenate([[0], np.cumsum(raw["duration_tsc"][:-1])])
    cpu, start, dur = tsc.detours_ns(raw, t0_tsc=1000, hz=hz)
    assert (cpu == 1).all()
    np.testing.assert_array_equal(start[1:], start[:-1] + dur[:-1])
    total_ns = float(raw["duration_tsc"].sum()) / hz * 1e9
    assert abs((start[-1] + dur[-1]) - total_ns) <= 0.5


def test_detours_sorted_by_cpu_then_start() -> None:
    raw = np.zeros(4, dtype=DETOUR_DTYPE)
    raw["cpu"] = [2, 1, 2, 1]
    raw["start_tsc"] = [50, 70, 10, 30]
    raw["duration_tsc"] = 5
    cpu, start, _ = tsc.detours_ns(raw, t0_tsc=0, hz=1e9)
    assert cpu.tolist() == [1, 1, 2, 2] and start.tolist() == [30, 70, 10, 50]


def test_since_ns_subtracts_in_ticks_before_converting() -> None:
    # Values near 2^53 would lose ticks if converted to float before the subtraction.
    t0 = 2**53 + 1
    got = tsc.since_ns(np.array([t0, t0 + 3, t0 + 2_600_000_001]), t0, 2.6e9)
    assert got.dtype == np.int64 and got.tolist() == [0, 1, 1_000_000_000]


def test_round_trip_and_scalars() -> None:
    hz = 2.5e9
    assert tsc.to_ns(2500, hz) == 1000.0
    assert tsc.to_ticks(1000.0, hz) == 2500.0
    np.testing.assert_allclose(tsc.to_ns(np.array([0, 5, 10]), hz), [0.0, 2.0, 4.0])
    assert tsc.to_int_ns(np.array([3, 4]), hz).tolist() == [1, 2]


def test_a_boot_cache_counts_only_for_its_own_boot_and_clocksource(tmp_path, monkeypatch) -> None:
    import json
    import os

    cache = tmp_path / "tsc.json"
    monkeypatch.setattr(tsc, "BOOT_CACHE", cache)
    key = "b0 tsc"
    assert tsc._cached_hz(key) is None  # none yet
    tsc._remember(key, 2.5e9)
    assert json.loads(cache.read_text()) == {"boot": key, "tsc_hz": 2.5e9}
    assert tsc._cached_hz(key) == 2.5e9
    assert tsc._cached_hz("b1 tsc") is None and tsc._cached_hz("b0 hpet") is None and tsc._cached_hz(None) is None
    for bad in ('{"boot": "b0 tsc", "tsc_hz": 5}', '{"boot": "b0 tsc", "tsc_hz": "2.5e9"}', "[1]", "{", "x" * 5000):
        cache.write_text(bad)
        assert tsc._cached_hz(key) is None, bad
    if os.geteuid() == 0:  # another user's file is not believed
        tsc._remember(key, 2.5e9)
        os.chown(cache, 65534, 65534)
        assert tsc._cached_hz(key) is None


def test_reading_the_boots_rate_brings_no_pydantic(tmp_path) -> None:
    """inject and every measurement read it before they start: pydantic's import doubled inject's (0.23 CPU-s)."""
    import subprocess
    import sys

    cache = tmp_path / "tsc.json"
    code = (
        "import sys\n"
        "from jitterscope.measure import tsc\n"
        f"tsc.BOOT_CACHE = __import__('pathlib').Path({str(cache)!r})\n"
        "tsc._remember('k', 2.5e9)\n"
        "assert tsc._cached_hz('k') == 2.5e9\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
