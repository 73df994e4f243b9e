"""TraceSession on the real kernel: capture, cleanup on every exit path, lost events.

Traced tests take the `tracefs` fixture (conftest): on a fresh machine it mounts
tracefs through the journal, as the tool does, and unmounts it afterwards.

Each test uses its own journal directory (JITTERSCOPE_STATE_DIR) so that
recovery here never touches other processes' journals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitterscope.journal import Journal, recover_stale
from jitterscope.tracing.parse import parse_trace
from jitterscope.tracing.session import INSTANCE_PREFIX, TraceSession
from jitterscope.tracing.tracefs import find_tracefs
from tests.support.loadgen import switch_storm

from .conftest import needs_tracing, probed_cpu
from .machine import run_as_nobody

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def private_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    monkeypatch.setenv("JITTERSCOPE_STATE_DIR", str(d))
    return d


def instances() -> set[str]:
    root = find_tracefs()
    assert root is not None, "the tracefs fixture mounts it"
    return {p.name for p in (root / "instances").iterdir()}


def busy_cpu(cpu: int, seconds: float) -> subprocess.Popen:
    return switch_storm(cpu, seconds)


@needs_tracing
def test_session_captures_timer_interrupts_and_switches_and_cleans_up(tmp_path: Path, tracefs: Path) -> None:
    cpu = probed_cpu()
    root = tracefs
    top = {f: (root / f).read_text() for f in ("trace_clock", "tracing_on", "buffer_size_kb", "tracing_cpumask")}
    # someone else's instance, which the session must leave alone (other helpers'
    # runs may create and remove jitterscope instances concurrently: not compared)
    decoy = root / "instances" / f"js-test-decoy-{os.getpid()}"
    decoy.mkdir()
    ours = f"{INSTANCE_PREFIX}{os.getpid()}"
    out = tmp_path / "trace"
    try:
        with Journal("test") as journal:
            with TraceSession([cpu], out, journal) as session:
                assert ours in instances()
                load = busy_cpu(cpu, 0.3)
                time.sleep(1.0)
                load.wait(timeout=10)
        assert ours not in instances()
        assert decoy.is_dir()
        assert {f: (root / f).read_text() for f in top} == top  # top-level buffer untouched
    finally:
        decoy.rmdir()
    td = parse_trace(out)
    act = td.activity.to_pylist()
    assert any(r["kind"] == "irq" and r["name"] == "local_timer" for r in act)
    switched_in = [r for r in act if r["kind"] == "thread" and not r["clipped"]]
    assert len(switched_in) >= 10  # the ping-pong made context switches
    assert {r["cpu"] for r in act} == {cpu}  # the CPU mask kept other CPUs out
    assert session.lost_events == td.lost_events
    for f in ("events.txt", "formats.json", "stats.json", "session.json", "symbols.txt", f"cpu{cpu}.raw"):
        assert (out / f).exists(), f


@needs_tracing
def test_ctrl_c_inside_the_session_still_removes_the_instance(tmp_path: Path, tracefs: Path) -> None:
    ours = f"{INSTANCE_PREFIX}{os.getpid()}"
    with Journal("test") as journal:
        with pytest.raises(KeyboardInterrupt):
            with TraceSession([probed_cpu()], tmp_path / "trace", journal):
                assert ours in instances()
                time.sleep(0.2)
                raise KeyboardInterrupt
        assert ours not in instances()  # removed by the session, not by the journal
    assert (tmp_path / "trace" / "stats.json").exists()  # what was captured is kept


CHILD = """
import sys, time
from pathlib import Path
from jitterscope.journal import Journal
from jitterscope.tracing.session import TraceSession
j = Journal("killed")
s = TraceSession([int(sys.argv[1])], Path(sys.argv[2]), j, buffer_kb=64)
s.start()
print("ready", flush=True)
time.sleep(60)
"""


def killed_session(tmp_path: Path) -> str:
    """Start a session in a child, kill -9 it; return the instance it left."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(probed_cpu()), str(tmp_path / "child")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        name = f"{INSTANCE_PREFIX}{child.pid}"
        assert name in instances()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    assert name in instances()  # nothing could clean up after kill -9
    return name


@needs_tracing
def test_instance_of_killed_run_is_removed_by_journal_recovery(tmp_path: Path, tracefs: Path) -> None:
    name = killed_session(tmp_path)
    undone = recover_stale()
    assert name not in instances()
    assert any(e["op"] == "trace_instance" and e["path"].endswith(name) and e["result"] == "restored" for e in undone)


@needs_tracing
def test_instance_of_killed_run_is_removed_by_the_next_start(tmp_path: Path, tracefs: Path) -> None:
    name = killed_session(tmp_path)
    with Journal("test") as journal:
        with TraceSession([probed_cpu()], tmp_path / "trace", journal) as session:
            assert name in session.stale_removed
            assert name not in instances()
    recover_stale()  # the dead run's journal: its instance is already gone


@needs_tracing
def test_tiny_buffer_reports_lost_events(tmp_path: Path, tracefs: Path) -> None:
    cpu = probed_cpu()
    # A 4 KiB ring (not grown for the rate) and its reader stopped (SIGSTOP) through a storm: the ring must
    # overflow, on a quiet machine as on a busy one.
    out = tmp_path / "trace"
    with Journal("test") as journal:
        with TraceSession([cpu], out, journal, buffer_kb=4, grow=False) as session:
            reader = int(session.info["reader_pid"])
            os.kill(reader, signal.SIGSTOP)
            try:
                busy_cpu(cpu, 0.8).wait(timeout=20)
            finally:
                os.kill(reader, signal.SIGCONT)
    td = parse_trace(out)
    assert session.lost_events > 0
    assert td.lost_events == session.lost_events
    assert sum(td.lost_by_cpu.values()) == td.lost_events


def test_without_root_tracing_available_says_why() -> None:
    if os.geteuid() != 0:
        from jitterscope.tracing.tracefs import tracing_available

        ok, reason = tracing_available()
        assert not ok and reason and "root" in reason
        return
    code = "from jitterscope.tracing.tracefs import tracing_available as t; ok, r = t(); print(ok, '|', r)"
    proc = run_as_nobody(["-c", code], cwd="/")
    assert proc.returncode == 0, proc.stderr
    ok, reason = proc.stdout.strip().split(" | ")
    assert ok == "False" and "not root" in reason
