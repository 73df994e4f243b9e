"""A killed controller leaves nothing stopped, frozen, throttled or spinning (spec 003, 4.8.6).

A best-effort program is started by the test and given by PID (so `restore` must make it run again, not
kill it).  `jitterscope protect` runs in a subprocess; once the program is really suspended (stopped or
frozen) the test kill -9s jitterscope and its native controller together, so nothing could resume it
on its way out; then `jitterscope restore` must.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitterscope.native_bin import native_bin
from jitterscope.sysinfo import online_cpus
from tests.integration.conftest import alive, jitterscope

pytestmark = [pytest.mark.root, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="actuators need root (SCHED_FIFO, cgroups)"),
              pytest.mark.skipif(len(online_cpus()) < 2, reason="needs two CPUs (critical and best-effort)")]

BE_CPU = online_cpus()[-1]


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                status = (d / "status").read_text()
            except OSError:
                continue
            if f"\nPPid:\t{pid}\n" in status:
                out.append(int(d.name))
    return out


def _frozen(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        hid, ctrls, path = line.split(":", 2)
        root = {"0": "/sys/fs/cgroup/unified"}.get(hid) if hid == "0" else \
            "/sys/fs/cgroup/freezer" if "freezer" in ctrls.split(",") else None
        if root and path != "/":
            d = Path(root + path)
            if (d / "cgroup.events").exists() and "frozen 1" in (d / "cgroup.events").read_text():
                return True
            if (d / "freezer.state").exists() and (d / "freezer.state").read_text().strip() != "THAWED":
                return True
    return False


def _leftovers() -> list[str]:
    found = []
    for root in ("/sys/fs/cgroup/freezer", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/cpu"):
        if Path(root).is_dir():
            found += [str(p) for p in Path(root).glob("jitterscope-protect-*")]
    found += [str(p) for p in Path("/dev/shm").glob("jitterscope-protect-*")]
    for d in Path("/proc").iterdir():   # a blocker thread still spinning
        if d.name.isdigit():
            try:
                comms = [(t / "comm").read_text().strip() for t in (d / "task").iterdir()]
            except OSError:
                continue
            found += [f"pid {d.name} thread {c}" for c in comms if c.startswith("js-protect")]
    return found


@pytest.fixture
def victim():
    """The best-effort program, run by the test: it must survive and run again."""
    proc = subprocess.Popen([str(native_bin("jitterscope-synload")), "--buffer", "262144",
                             "--duration-ns", str(120 * 10**9)], stdout=subprocess.DEVNULL)
    yield proc
    if _leftovers():   # a failed test must not leave the machine changed for the next one
        jitterscope("restore", timeout=60)
    os.kill(proc.pid, signal.SIGCONT)
    proc.kill()
    proc.wait()


def _suspended(pid: int, actuator: str) -> bool:
    return _state(pid) == "T" if actuator == "sigstop" else _frozen(pid) if actuator.startswith("freezer") else True


@pytest.mark.parametrize("actuator", ["sigstop", "freezer:v2", "freezer:v1", "rt"])
def test_kill_9_mid_suspension_then_restore(victim: subprocess.Popen, actuator: str, tmp_path: Path):
    before = os.sched_getaffinity(victim.pid)
    cmd = [sys.executable, "-m", "jitterscope", "protect", "--best-effort", str(victim.pid), "--cpus", str(BE_CPU),
           "--actuator", actuator, "--signal", "always", "--sample", "100us", "--suspend", "900us",
           "--duration", "60s", "--out", str(tmp_path / "run")]
    tool = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60   # jitterscope starts slowly on a loaded machine
        ctl = []
        while time.monotonic() < deadline and not (ctl and _suspended(victim.pid, actuator)):
            ctl = [c for c in _children(tool.pid) if Path(f"/proc/{c}/comm").read_text().startswith("jitterscope-pro")]
            time.sleep(0.0005)
        assert ctl, f"the controller never started: {tool.stderr.read().decode() if tool.poll() else ''}"
        assert _suspended(victim.pid, actuator), "never caught the program suspended"
        # together (controller first): nothing gets to resume it on its way out; the RT blocker alone is
        # left to die with jitterscope (it must not keep spinning)
        for pid in ([] if actuator == "rt" else ctl) + [tool.pid]:
            os.kill(pid, signal.SIGKILL)
    finally:
        tool.kill()
        tool.wait()
    if actuator == "sigstop":
        assert _state(victim.pid) == "T"          # really left stopped by the kill
    if actuator == "rt":
        deadline = time.monotonic() + 5
        while any(alive(c) for c in ctl) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(c) for c in ctl), "the RT blocker outlived jitterscope"
    proc = jitterscope("restore", timeout=60)
    assert proc.returncode == 0, proc.stderr
    time.sleep(0.2)
    assert alive(victim.pid) and _state(victim.pid) in "RS", _state(victim.pid)
    assert not _frozen(victim.pid)
    assert os.sched_getaffinity(victim.pid) == before, proc.stdout + proc.stderr
    assert not _leftovers()


def test_a_killed_native_controller_is_undone_by_jitterscope_itself(victim: subprocess.Popen, tmp_path: Path):
    """kill -9 of the controller alone: jitterscope notices, resumes the program and still writes the run."""
    cmd = [sys.executable, "-m", "jitterscope", "protect", "--best-effort", str(victim.pid), "--cpus", str(BE_CPU),
           "--actuator", "sigstop", "--signal", "always", "--duration", "60s", "--out", str(tmp_path / "run")]
    tool = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    ctl: list[int] = []
    while time.monotonic() < deadline and not (ctl and _state(victim.pid) == "T"):
        ctl = [c for c in _children(tool.pid) if Path(f"/proc/{c}/comm").read_text().startswith("jitterscope-pro")]
        time.sleep(0.0005)
    assert ctl and _state(victim.pid) == "T"
    time.sleep(0.5)   # let it drain some records
    os.kill(ctl[0], signal.SIGKILL)
    out, err = tool.communicate(timeout=60)
    assert tool.returncode == 0, err
    assert "did not finish its records" in out
    assert alive(victim.pid) and _state(victim.pid) in "RS"
    assert (tmp_path / "run" / "samples.parquet").exists()
    assert not _leftovers()
