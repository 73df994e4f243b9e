"""The probe streams: its output grows while its memory does not.

A threshold just above the loop's own iteration time turns most iterations
into "detours", a worst case that writes megabytes per second and overflows
the rings; the dropped count must say so.
"""

from __future__ import annotations

import time
from pathlib import Path

from jitterscope.measure.probe import Probe, read_detours
from jitterscope.sysinfo import online_cpus


def probed_cpu() -> int:
    return online_cpus()[-1]  # the highest CPU; CPU 0 keeps the test runner


RING_BYTES = (1 << 16) * 24  # RING_RECORDS x sizeof(js_detour), per CPU


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_output_grows_rss_stays_flat(tmp_path):
    cpu = probed_cpu()
    # The loop's fastest iteration on this machine, to set a worst-case threshold.
    with Probe([cpu], 1000, tmp_path / "cal.raw", duration_ns=200_000_000) as cal:
        pass
    loop_ns = cal.wait().per_cpu[cpu]["loop_ns_min"]
    out = tmp_path / "flood.raw"
    probe = Probe([cpu], 1.5 * loop_ns, out, duration_ns=2_000_000_000).start()
    try:
        time.sleep(0.4)
        rss0, size0 = _rss_kb(probe.pid), out.stat().st_size
        time.sleep(1.2)
        rss1, size1 = _rss_kb(probe.pid), out.stat().st_size
    finally:
        res = probe.wait(timeout=30)
    assert size1 - size0 > 4 * RING_BYTES, f"only {size1 - size0} bytes written; not a stress"
    assert rss1 - rss0 < 256, f"RSS grew {rss1 - rss0} kB while {size1 - size0} bytes were written"
    st = res.per_cpu[cpu]
    assert st["detours"] == res.records + res.dropped  # every detour either written or counted dropped
    assert len(read_detours(out)) == res.records
