"""Probe timestamps and kernel trace timestamps are the same clock.

The probe reads the TSC; measure's private trace instance uses trace_clock
`x86-tsc`, whose timestamps are raw TSC values.  The probe's --align-marker mode
reads the TSC (fenced) and at once writes it to the instance's trace_marker,
then reads the TSC again: the kernel stamps the marker event inside that
write(), so with one shared clock every kernel stamp k lies in [before, after].

For a clock offset d (kernel = probe + d), each marker gives
k - after <= d <= k - before, so d lies in [max(k - after), min(k - before)].
We assert that interval contains 0 and is narrower than 1 us, i.e. the clocks
agree to well under 1 us; and that the stamp comes after the probe's read by
under 2 us for 95% of markers (the rest allow an interrupt or preemption
between the read and the write on this shared 2-CPU machine: real elapsed
time, not offset).

The interval is the tightest brackets' of all markers, so it narrows with more of them, and they are written
in BATCHES probe runs: 1,000 markers written back to back take a millisecond, and a host busy for that
millisecond slowed every write in it (the tightest bracket was 1.08 us wide once, in the suite under a CPU hog,
where the median write takes 175 ns).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from jitterscope.journal import Journal
from jitterscope.native_bin import native_bin

N_MARKERS = 1000  # per batch
BATCHES = 4
MARK_RE = re.compile(r"\s(\d+): tracing_mark_write: jitterscope-align (\d+)")


def test_probe_tsc_and_x86_tsc_trace_clock_agree_within_1us(tracefs: Path):
    inst = tracefs / "instances" / f"jitterscope-test-{os.getpid()}"
    with Journal("test clock alignment") as journal:  # removed on every exit, and after kill -9
        journal.begin("rmdir", path=str(inst))
        inst.mkdir()
        clocks = (inst / "trace_clock").read_text()
        if "x86-tsc" not in clocks:
            pytest.skip(f"trace clock x86-tsc not offered (only: {clocks.strip()})")
        (inst / "trace_clock").write_text("x86-tsc")
        (inst / "buffer_size_kb").write_text("1024")  # 4,000 markers need ~400 KB; never overrun
        outs = [
            subprocess.run(
                [str(native_bin("jitterscope-probe")), "--align-marker", str(inst / "trace_marker"), str(N_MARKERS)],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            )
            for _ in range(BATCHES)
        ]
        trace = (inst / "trace").read_text()

    markers = np.concatenate(
        [np.array(json.loads(o.stdout)["markers"], dtype=np.int64) for o in outs]
    )  # [before, after]
    kernel_by_probe = {int(p): int(k) for k, p in MARK_RE.findall(trace)}
    assert len(kernel_by_probe) == BATCHES * N_MARKERS, "trace lost markers; the comparison needs all of them"
    before, after = markers[:, 0], markers[:, 1]
    k = np.array([kernel_by_probe[int(b)] for b in before], dtype=np.int64)

    hz = _tsc_hz()
    # One clock: every kernel stamp inside its bracket, no exception.
    assert np.all(k >= before), f"{np.sum(k < before)} kernel stamps precede the probe's TSC read"
    assert np.all(k <= after), f"{np.sum(k > after)} kernel stamps follow the probe's next read"
    lo, hi = int((k - after).max()), int((k - before).min())  # bounds on the offset, cycles
    assert lo <= 0 <= hi
    assert (hi - lo) * 1e9 / hz < 1000, f"offset bound {lo}..{hi} cycles is not under 1 us"
    lag_ns = (k - before) * 1e9 / hz
    # ~550 ns when quiet; 1,032 ns in a CI-like run on a busy host (the offset bound above held)
    assert np.percentile(lag_ns, 95) < 2000, f"p95 write latency {np.percentile(lag_ns, 95):.0f} ns"


def _tsc_hz() -> float:
    from jitterscope.measure.tsc import tsc_hz

    return tsc_hz()
