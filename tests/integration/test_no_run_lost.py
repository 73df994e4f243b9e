"""No fault loses a measurement: after SIGHUP, a second Ctrl-C or a full disk the
user gets their run back, from the raw capture, with `jitterscope analyze`.

(kill -9 and a killed MPI rank: test_fresh_machine.py and test_cluster_faults.py.)
"""

from __future__ import annotations

import json
import os
import pty
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from jitterscope.childgroup import own_group
from tests.support.loadgen import switch_storm
from tests.support.throttle import cpu_quota

from .conftest import jitterscope, needs_tracing, probed_cpu
from .machine import in_namespace, js, needs_namespace, started

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JITTERSCOPE_STATE_DIR", str(tmp_path / "state"))


def start_measure(
    out: Path, seconds: str, preexec: Callable[[], object] | None = None, **kw: object
) -> subprocess.Popen:
    """measure in its own process group, as a terminal would run it (signals go to its group); `preexec` runs
    in the child first."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitterscope",
            "measure",
            "--cpus",
            str(probed_cpu()),
            "--duration",
            seconds,
            "--out",
            str(out),
            "--no-report",
        ],
        preexec_fn=own_group(preexec),
        text=True,
        **kw,
    )  # type: ignore[call-overload]


def wait_for_probe(out: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ((out / "detours.raw").exists() and (out / "detours.raw").stat().st_size > 64):
        assert proc.poll() is None, "measure ended before its probe started"
        assert time.monotonic() < deadline, "the probe never started"
        time.sleep(0.05)


def assert_complete(out: Path) -> dict:
    """A complete run: loads, no raw capture or temporaries left, interrupted as it was."""
    names = {p.name for p in out.iterdir()}
    assert {"meta.json", "summary.json", "detours.parquet", "attribution.parquet"} <= names, names
    assert not names & {"capture.json", "detours.raw", "detours.end.json"}, names
    assert not [p for p in out.rglob(".*.tmp*")], "temporary files left behind"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cpus"][str(probed_cpu())]["detours"] > 0
    return json.loads((out / "meta.json").read_text())


def test_sighup_finishes_the_run_like_ctrl_c(tmp_path: Path) -> None:
    """A closed terminal: SIGHUP to the whole foreground group, then the terminal is gone."""
    out = tmp_path / "run"
    master, slave = pty.openpty()
    proc = start_measure(out, "30s", stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    try:
        wait_for_probe(out, proc)
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGHUP)
        os.close(master)  # the terminal disappears: writes to it now fail
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    meta = assert_complete(out)  # written by measure itself: nothing left to analyse
    assert meta["interrupted"] and meta["duration_s"] > 0


def _signal_state(pid: int) -> str:
    """The process's state, wait channel and signal masks (/proc), for a failure's message."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError as err:
        return f"pid {pid}: {err}"
    keep = [ln for ln in status.splitlines() if ln.startswith(("State", "Threads", "Sig", "Shd"))]
    return f"pid {pid} wchan {wchan}: " + "; ".join(keep)


def test_second_ctrl_c_during_analysis_keeps_the_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = start_measure(out, "30s", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stderr], daemon=True)
    reader.start()
    try:
        wait_for_probe(out, proc)
        switch_storm(probed_cpu(), 1.0).wait(timeout=60)  # something to analyse
        with cpu_quota(proc.pid) as quota:
            # From the first Ctrl-C on, measure gets 5% of a CPU: its analysis then lasts 20 times its CPU
            # time, however fast the machine or the analysis, far longer than this test takes to answer the
            # line that says it has started.
            quota.set(0.05)
            os.killpg(proc.pid, signal.SIGINT)  # first Ctrl-C: finish with what was measured
            before: list[str] = []
            while not before or "analysing the capture" not in before[-1]:  # the capture is complete, analysis begun
                before.append(lines.get(timeout=120))
            state = f"{_signal_state(proc.pid)}\n{quota.describe()}"  # said if the Ctrl-C does not end it
            os.killpg(proc.pid, signal.SIGINT)  # second: during the analysis
            quota.set(None)
            proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    reader.join(10)  # the rest of its stderr
    err = "".join(lines.queue)
    assert proc.returncode == 130, f"{state}\n{''.join(before)}--- after the second Ctrl-C:\n{err}"
    assert "Traceback" not in err
    assert f"jitterscope analyze {out}" in err, err
    assert (out / "capture.json").exists() and (out / "detours.raw").exists()
    again = jitterscope("analyze", "--no-report", str(out))
    assert again.returncode == 0, again.stderr
    meta = assert_complete(out)
    assert meta["interrupted"] and meta["duration_s"] > 0


def on_full_disk(tmp_path: Path, size: str, failing: str, run: Path) -> tuple[str, set[str], Path]:
    """On a `size` tmpfs at tmp_path/disk (private namespace) run the shell `failing`, which
    must fill the disk (disk/filler) and fail with exit 2; then free the space, `analyze`
    the run and copy it out.  Return failing's stderr, what the run held after, the copy."""
    disk, keep = tmp_path / "disk", tmp_path / "recovered"
    disk.mkdir()
    script = (
        f"mount -t tmpfs -o size={size} jitterscope-test {disk} || exit 97\n"
        f'( {failing} ) 2> {tmp_path}/failing.err; echo "failing-rc=$?" >&2\n'
        f"ls -a {run} > {tmp_path}/left.txt\n"
        f"rm -f {disk}/filler\n"
        f"{js('analyze', '--no-report', str(run))} > /dev/null || exit 3\n"
        f"cp -r {run} {keep}\n"
    )
    proc = in_namespace(script, tracefs="theirs")
    err = (tmp_path / "failing.err").read_text()
    assert proc.returncode == 0, proc.stderr + err
    assert "failing-rc=2" in proc.stderr, err
    assert "Traceback" not in err, err
    left = set((tmp_path / "left.txt").read_text().split())
    assert {"capture.json", "detours.raw"} <= left, left  # the raw capture is kept
    assert not [n for n in left if ".tmp" in n], left  # and no temporary is left
    return err, left, keep


@needs_namespace
@needs_tracing
def test_disk_full_during_capture_is_one_line_and_analyze_recovers(tmp_path: Path) -> None:
    """A 24 MiB tmpfs filled while measuring (10 s: a capture it can hold by measure's estimate of 1.75 MiB a
    second traced, else measure refuses it up front)."""
    out = tmp_path / "disk" / "run"
    failing = (
        f"{js('measure', '--cpus', str(probed_cpu()), '--duration', '10s', '--no-report', '--out', str(out))}"
        f" > /dev/null & pid=$!\n"
        f"{started(out)}; sleep 1\n"
        f"dd if=/dev/zero of={tmp_path / 'disk'}/filler bs=64k 2> /dev/null\n"
        f"wait $pid"
    )
    err, _, keep = on_full_disk(tmp_path, "24m", failing, out)
    lines = [ln for ln in err.splitlines() if ln.startswith("jitterscope: error")]
    assert len(lines) == 1 and "disk full" in lines[0] and "jitterscope analyze" in lines[0], err
    meta = assert_complete(keep)
    assert meta["recovered"]["missing"], "a run cut short by a full disk lost its last moments"


@needs_namespace
def test_disk_full_during_analysis_keeps_the_capture(tmp_path: Path) -> None:
    """analyze itself on a full disk: one line, the raw capture intact, no temporaries;
    with space again it completes the run."""
    src = tmp_path / "src"
    proc = start_measure(src, "30s", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_probe(src, proc)
        time.sleep(1.0)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group: the probe dies unfinished too
        proc.wait()
    subprocess.run([sys.executable, "-m", "jitterscope", "restore"], capture_output=True, check=False)
    disk = tmp_path / "disk"
    run = disk / "run"
    failing = (
        f"cp -r {src} {run}\n"
        f"free=$(($(stat -f -c '%a * %S' {disk}))); head -c $((free - 8192)) /dev/zero > {disk}/filler\n"
        f"{js('analyze', '--no-report', str(run))} > /dev/null"
    )
    err, _, keep = on_full_disk(tmp_path, "16m", failing, run)
    assert err.count("\n") == 1 and "disk full" in err, err
    meta = assert_complete(keep)
    assert any("probe" in m for m in meta["recovered"]["missing"]), meta["recovered"]


def cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # it ended while we looked
        return b""


def test_a_probe_signalled_from_outside_is_an_early_end_not_a_full_run(tmp_path: Path) -> None:
    """A script's background job ignores SIGINT, its probe does not: a Ctrl-C there used to end the
    run early while meta.json said it ran as asked (4.4 s of a 30 s run, "interrupted": false)."""
    out = tmp_path / "run"
    proc = start_measure(
        out,
        "30s",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        wait_for_probe(out, proc)
        time.sleep(0.5)
        probes = [
            int(d)
            for d in os.listdir("/proc")
            if d.isdigit() and d != str(proc.pid) and str(out / "detours.raw").encode() in cmdline(d)
        ]
        assert probes, "no probe process found"
        os.kill(probes[0], signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err
    assert "the probe stopped after" in err and "Traceback" not in err, err
    meta = assert_complete(out)
    assert meta["interrupted"] and 0 < meta["duration_s"] < 25
