"""The native trace reader (jitterscope-tracereader) on the real kernel: full pages, nothing lost, off the
probed CPU, its cost reported, and a capture that survives kill -9 of jitterscope.

One storm capture is shared by the module (a 2 s context-switch storm on the probed CPU).
"""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from jitterscope.journal import Journal
from jitterscope.sysinfo import online_cpus
from jitterscope.tracing.session import TraceSession
from tests.support.loadgen import switch_storm

from .conftest import jitterscope, needs_tracing, probed_cpu

pytestmark = [needs_tracing, pytest.mark.timeout(120)]

# No kernel record we enable is this long (sched_switch is 68 B, a marker ~60 B, a time extend 8 B): a page the
# kernel closed has less room left than that.
MAX_RECORD = 128
COMMIT_MASK = (1 << 30) - 1  # the commit word's top bits flag missed events


@dataclass
class Capture:
    out: Path
    info: dict
    allowed_while_running: set[int]


def allowed_cpus(pid: int) -> set[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            out: set[int] = set()
            for part in line.split(":", 1)[1].strip().split(","):
                lo, _, hi = part.partition("-")
                out.update(range(int(lo), int(hi or lo) + 1))
            return out
    raise AssertionError(f"no Cpus_allowed_list for {pid}")


@pytest.fixture(scope="module")
def storm_capture(tmp_path_factory: pytest.TempPathFactory, tracefs: Path) -> Capture:
    tmp = tmp_path_factory.mktemp("capture")
    os.environ["JITTERSCOPE_STATE_DIR"] = str(tmp / "state")  # recovery here never touches others' journals
    cpu = probed_cpu()
    out = tmp / "trace"
    with Journal("test") as journal, TraceSession([cpu], out, journal) as session:
        allowed = allowed_cpus(int(session.info["reader_pid"]))
        # Once the trace runs (a storm before it once held the instance's buffer resize, loadgen.killed_measure),
        # at nice -5 as there: it shares its CPU with the hog and the other tests' processes.  It ends by itself.
        storm = switch_storm(cpu, 3.0, nice=-5)
        try:
            time.sleep(2.0)
        finally:
            storm.kill()
            storm.wait()
    return Capture(out, json.loads((out / "session.json").read_text()), allowed)


def pages(raw: Path, page_size: int) -> list[int]:
    """Committed data bytes of each page of a cpuN.raw."""
    data = raw.read_bytes()
    assert len(data) % page_size == 0, f"{raw.name}: {len(data)} bytes is not whole {page_size}-byte pages"
    return [struct.unpack_from("<Q", data, i + 8)[0] & COMMIT_MASK for i in range(0, len(data), page_size)]


def test_storm_pages_are_full_but_the_last_and_nothing_is_lost(storm_capture: Capture) -> None:
    info = storm_capture.info
    page = int(info["page_size"])
    data_size = page - 16  # the page header: timestamp and commit words
    raw = storm_capture.out / f"cpu{probed_cpu()}.raw"
    commits = pages(raw, page)
    assert len(commits) >= 10, "the storm filled pages"
    not_full = [i for i, c in enumerate(commits[:-1]) if data_size - c >= MAX_RECORD]
    assert not not_full, f"pages {not_full[:10]} of {len(commits)} were written before they were full"
    assert info["lost_events"] == 0
    reader = info["reader"]
    assert reader["partial_pages"] <= 1 and reader["full_pages"] == len(commits) - reader["partial_pages"]


def test_capture_is_as_dense_as_the_kernels_own_records(storm_capture: Capture) -> None:
    """Bytes on disk per event side by side with the bytes the kernel's records of those events take:
    only page headers and the tail of each page too short for another record are added (and one last page)."""
    info = storm_capture.info
    page = int(info["page_size"])
    raw = storm_capture.out / f"cpu{probed_cpu()}.raw"
    committed = sum(pages(raw, page))
    written = raw.stat().st_size
    events = int(info["reader"]["events"])
    assert events > 0
    on_disk, in_kernel = written / events, committed / events
    assert on_disk / in_kernel <= page / (page - 16 - MAX_RECORD) + page / committed, (on_disk, in_kernel)
    assert info["reader"]["bytes_per_event"] == pytest.approx(on_disk, abs=0.01)


def test_reader_stays_off_the_probed_cpu_and_reports_its_cost(storm_capture: Capture) -> None:
    cpu = probed_cpu()
    if len(online_cpus()) < 2:
        pytest.skip("one online CPU: the reader has nowhere else to run")
    assert cpu not in storm_capture.allowed_while_running
    reader = storm_capture.info["reader"]
    assert cpu not in reader["affinity"]
    assert reader["ended"] == "stop"
    assert reader["cpu_s"] >= 0 and reader["cpu_s_per_m_events"] is not None
    assert reader["cpu_s_per_m_events"] == pytest.approx(reader["cpu_s"] / (reader["events"] / 1e6), rel=1e-3)


def test_kill_9_of_jitterscope_mid_capture_leaves_a_trace_analyze_rebuilds(tmp_path: Path, tracefs: Path) -> None:
    os.environ["JITTERSCOPE_STATE_DIR"] = str(tmp_path / "state")
    cpu = probed_cpu()
    out = tmp_path / "run"
    storm: subprocess.Popen | None = None
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitterscope", "measure", "--cpus", str(cpu), "--duration", "30s", "--no-report"]
        + ["--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        session = out / "trace" / "session.json"
        deadline = time.monotonic() + 60
        while not ((out / "detours.raw").exists() and session.exists() and "reader_pid" in session.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, "measure never started its probe"
            time.sleep(0.05)
        # the storm once the session is up, as the capture fixture's: started before it, it held the instance's
        # buffer resize (which waits on the CPU's kworker) and this test took 3.6-10.8 s from one run to the next
        storm = switch_storm(cpu, 4.0, nice=-5)
        time.sleep(1.5)
        reader = int(json.loads(session.read_text())["reader_pid"])
        proc.kill()  # jitterscope alone: its reader and probe see it go
        proc.wait(timeout=10)
        deadline = time.monotonic() + 20
        while Path(f"/proc/{reader}").exists() and "zombie" not in Path(f"/proc/{reader}/status").read_text():
            assert time.monotonic() < deadline, "the reader outlived jitterscope"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        if storm is not None:
            storm.kill()
            storm.wait()
    report = json.loads((out / "trace" / "reader.json").read_text())
    assert report["ended"] == "parent_gone"
    # kernel addresses (its pages, symbols.txt) for its owner alone, as kptr_restrict would have them
    assert stat.S_IMODE((out / "trace").stat().st_mode) == 0o700
    page = int(json.loads(session.read_text())["page_size"])
    raw = out / "trace" / f"cpu{cpu}.raw"
    assert raw.stat().st_size > 0 and raw.stat().st_size % page == 0
    done = jitterscope("analyze", "--no-report", str(out), timeout=110)
    assert done.returncode == 0, done.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["tracing"]["events"] > 0
