"""Starting, naming, stopping and killing the probe; its TSC calibration."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from jitterscope.errors import JitterscopeError
from jitterscope.measure.probe import Probe, read_detours, read_header
from jitterscope.native_bin import native_bin
from jitterscope.sysinfo import online_cpus

from .conftest import assert_dies_with_parent

CPU = online_cpus()[-1]


def test_threads_named_pinned_and_writer_kept_off_probed_cpu(tmp_path):
    with Probe([CPU], 1000, tmp_path / "d.raw") as p:
        tid = p.thread_tids[CPU]
        assert p.thread_comms == {CPU: f"js-probe/{CPU}"}
        assert Path(f"/proc/{p.pid}/task/{tid}/comm").read_text().strip() == f"js-probe/{CPU}"
        assert os.sched_getaffinity(tid) == {CPU}
        if len(online_cpus()) > 1:
            assert CPU not in os.sched_getaffinity(p.pid)  # the main thread is the writer
        assert p.running()
    res = p.wait()
    st = res.per_cpu[CPU]
    assert st["iterations"] > 0 and st["first_tsc"] >= res.t0_tsc and st["last_tsc"] <= res.end_tsc
    assert 0 < st["loop_ns_min"] <= st["resolution_ns"] < 1000
    assert read_header(tmp_path / "d.raw")["complete"]


def test_stop_ends_an_untimed_probe_with_a_complete_file(tmp_path):
    p = Probe([CPU], 1000, tmp_path / "d.raw").start()
    time.sleep(0.3)
    p.stop()
    res = p.wait(timeout=10)
    span_s = (res.per_cpu[CPU]["last_tsc"] - res.per_cpu[CPU]["first_tsc"]) / res.tsc_hz
    assert 0.25 < span_s < 5
    assert len(read_detours(tmp_path / "d.raw")) == res.records


def test_a_timed_probe_measures_its_whole_duration_on_every_cpu(tmp_path):
    """The duration counts from the moment the last thread loops: a thread held off its CPU after
    the release (a busy host) once measured 1.46 s of a 2 s run.  The writer's clock is
    CLOCK_MONOTONIC, which NTP may slew by up to 500 ppm against the TSC."""
    cpus = online_cpus()
    res = Probe(cpus, 1000, tmp_path / "d.raw", duration_ns=300_000_000).start().wait(timeout=30)
    for c in cpus:
        span_s = (res.per_cpu[c]["last_tsc"] - res.per_cpu[c]["first_tsc"]) / res.tsc_hz
        assert span_s >= 0.3 * (1 - 5e-4), (c, span_s)


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root (or CAP_SYS_NICE)")
def test_fifo_priority_applies_to_the_probe_threads(tmp_path):
    with Probe([CPU], 1000, tmp_path / "d.raw", duration_ns=300_000_000, fifo_priority=5) as p:
        tid = p.thread_tids[CPU]
        assert os.sched_getscheduler(tid) == os.SCHED_FIFO
        assert os.sched_getparam(tid).sched_priority == 5
        assert os.sched_getscheduler(p.pid) == os.SCHED_OTHER  # the writer is not real-time


def test_offline_cpu_is_a_clear_error(tmp_path):
    with pytest.raises(JitterscopeError, match=r"CPU 4000 out of range"):
        Probe([4000], 1000, tmp_path / "d.raw").start()
    # The native program checks too, for callers that bypass Probe.
    out = subprocess.run(
        [
            str(native_bin("jitterscope-probe")),
            "--cpus",
            "1000",
            "--threshold-cycles",
            "100",
            "--out",
            str(tmp_path / "n.raw"),
        ],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert out.returncode == 2 and "CPU 1000 is offline" in out.stderr and not out.stdout


def test_unwritable_output_is_a_clear_error(tmp_path):
    with pytest.raises(JitterscopeError, match="cannot create"):
        Probe([CPU], 1000, tmp_path / "missing-dir" / "d.raw").start()


def test_probe_dies_with_its_parent(tmp_path):
    """A SIGKILLed measure must not leave a probe spinning (PR_SET_PDEATHSIG)."""
    script = (
        "import sys, time; from pathlib import Path; from jitterscope.measure.probe import Probe\n"
        f"p = Probe([{CPU}], 1000, Path({str(tmp_path / 'd.raw')!r})).start()\n"
        "print(p.pid, flush=True); time.sleep(60)\n"
    )
    assert_dies_with_parent(script, "probe")


def test_tsc_calibration_is_stable_to_100ppm():
    def once() -> dict:
        out = subprocess.run(
            [str(native_bin("jitterscope-probe")), "--calibrate", "150"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return json.loads(out.stdout)

    a, b = once(), once()
    assert abs(a["tsc_hz"] - b["tsc_hz"]) / a["tsc_hz"] < 100e-6
    if a["cpuid_hz"]:  # the frequency the CPU/hypervisor announces, when it does
        assert abs(a["tsc_hz"] - a["cpuid_hz"]) / a["cpuid_hz"] < 1000e-6


def test_the_calibration_is_kept_for_the_rest_of_the_boot(tmp_path, monkeypatch):
    """One process calibrates; the next reads the figure instead of spending 150 ms on it again."""
    from jitterscope.measure import tsc

    monkeypatch.setattr(tsc, "BOOT_CACHE", tmp_path / "run" / "tsc.json")
    monkeypatch.setattr(tsc, "_calibrated", None)
    first = tsc.Calibration()
    assert first._proc is not None  # nothing kept yet: it measures
    hz = first.result()
    monkeypatch.setattr(tsc, "_calibrated", None)  # as in a new process
    second = tsc.Calibration()
    assert second._proc is None and second.result() == hz
