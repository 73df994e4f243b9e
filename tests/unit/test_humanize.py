"""Numbers for people (humanize.py): what the issue found unreadable reads plainly."""

from __future__ import annotations

import pytest

from jitterscope.humanize import count, duration_ns, number, percent, ppm, seconds


@pytest.mark.parametrize(
    "fn,value,text",
    [
        (percent, 11.3, "1,130%"),
        (percent, 0.00583, "0.583%"),
        (percent, 2.22e-16, "0%"),
        (percent, -0.05, "-5%"),
        (seconds, 2000833.3 * 3600, "about 228 years"),
        (seconds, 5400, "1.5 h"),
        (seconds, 3 * 86400, "3 days"),
        (seconds, 2700, "45 min"),
        (seconds, 42, "42 s"),
        (seconds, 0.5, "500 ms"),
        (count, (1, "time"), "1 time"),
        (count, (2, "time"), "2 times"),
        (count, (1, "host"), "1 host"),
        (count, (1, "window"), "1 window"),
        (count, (12345, "detour"), "12,345 detours"),
        (count, (0, "entry"), "0 entries"),
        (ppm, 546101.9, "546,102 ppm"),
        (ppm, 12.34, "12.3 ppm"),
        (number, 24343.477, "24,343"),
        (number, 0.0123, "0.0123"),
        (number, float("inf"), "infinite"),
        (duration_ns, 850, "850 ns"),
        (duration_ns, 1_234_567, "1.23 ms"),
        (duration_ns, 90e9, "1.5 min"),
    ],
)
def test_reads_plainly(fn, value, text) -> None:
    assert (fn(*value) if isinstance(value, tuple) else fn(value)) == text
    assert "e+" not in text and "e-" not in text
