"""A killed controller leaves nothing stopped, frozen, throttled or spinning (spec 003, 4.8.6).

A best-effort program is started by the test and given by PID (so `restore` must make it run again, not
kill it).  `jitterscope protect` runs in a subprocess; once the program is really suspended (stopped or
frozen) the test kill -9s jitterscope and its native controller together, so nothing could resume it
on its way out; then `jitterscope restore` must.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jitterscope.childgroup import own_group
from jitterscope.errors import JitterscopeError
from jitterscope.native_bin import native_bin
from jitterscope.protect.outcome import RECORDS
from jitterscope.protect.records import read_records
from jitterscope.sysinfo import online_cpus
from tests.integration.conftest import alive, jitterscope

pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="actuators need root (SCHED_FIFO, cgroups)"),
    pytest.mark.skipif(len(online_cpus()) < 2, reason="needs two CPUs (critical and best-effort)"),
]

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
        root = (
            {"0": "/sys/fs/cgroup/unified"}.get(hid)
            if hid == "0"
            else "/sys/fs/cgroup/freezer"
            if "freezer" in ctrls.split(",")
            else None
        )
        if root and path != "/":
            d = Path(root + path)
            if (d / "cgroup.events").exists() and "frozen 1" in (d / "cgroup.events").read_text():
                return True
            if (d / "freezer.state").exists() and (d / "freezer.state").read_text().strip() != "THAWED":
                return True
    return False


def _owner_gone(name: str) -> bool:
    """`jitterscope-protect-<pid>-...`: whether the jitterscope that made it has ended (another engineer's
    live run on this shared machine is not a leftover)."""
    m = re.match(r"jitterscope-protect-(\d+)-", name)
    return bool(m) and not alive(int(m.group(1)))


def _leftovers() -> list[str]:
    found = []
    for root in ("/sys/fs/cgroup/freezer", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/cpu", "/dev/shm"):
        if Path(root).is_dir():
            found += [str(p) for p in Path(root).glob("jitterscope-protect-*") if _owner_gone(p.name)]
    for d in Path("/proc").iterdir():  # a blocker thread still spinning after its jitterscope ended
        if d.name.isdigit():
            try:
                comms = [(t / "comm").read_text().strip() for t in (d / "task").iterdir()]
                ppid = int(
                    next(ln.split()[1] for ln in (d / "status").read_text().splitlines() if ln.startswith("PPid:"))
                )
            except (OSError, StopIteration, ValueError):
                continue
            if ppid == 1 or not alive(ppid):
                found += [f"pid {d.name} thread {c}" for c in comms if c.startswith("js-protect")]
    return found


def _victim() -> subprocess.Popen:
    """A best-effort program run by the test: it must survive and run again.  At nice 19: the kill -9 test
    keeps four of them spinning, and at nice 0 they starved each protect's own start-up for 40 s under load."""
    return subprocess.Popen(
        [str(native_bin("jitterscope-synload")), "--buffer", "262144", "--duration-ns", str(120 * 10**9)],
        stdout=subprocess.DEVNULL,
        preexec_fn=lambda: os.nice(19),
    )


def _end(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGCONT)
    proc.kill()
    proc.wait()


@pytest.fixture
def victim():
    proc = _victim()
    yield proc
    if _leftovers():  # a failed test must not leave the machine changed for the next one
        jitterscope("restore", timeout=60)
    _end(proc)


def _controller(tool: subprocess.Popen) -> list[int]:
    """The native controller among jitterscope's children, once it runs (jitterscope starts slowly on a
    loaded machine)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and tool.poll() is None:
        ctl = [c for c in _children(tool.pid) if Path(f"/proc/{c}/comm").read_text().startswith("jitterscope-pro")]
        if ctl:
            return ctl
        time.sleep(0.05)
    return []


@contextlib.contextmanager
def _off_the_best_effort_cpu() -> Iterator[None]:
    """This thread on the other CPUs: on the best-effort CPU it would run only when the SCHED_FIFO controller
    sleeps, which is when the program has just been told to stop and has not yet, so it would look at the
    same phase of every cycle and could miss the stop every time (the controller spins the end of each
    suspension since the early wake-up, leaving the poller only that phase)."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, before - {BE_CPU} or before)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _caught(cond: Callable[[], bool], seconds: float = 60) -> bool:
    """Whether `cond` held at some look, looking without pause (a read of /proc every few microseconds) from
    off the best-effort CPU: the program is suspended most of every cycle, and a look that does not share
    its CPU with the controller sees that at once; `seconds` is only how long a broken actuator may take
    to show itself broken."""
    deadline = time.monotonic() + seconds
    with _off_the_best_effort_cpu():
        while time.monotonic() < deadline:
            if cond():
                return True
    return False


def _wait_recovered(pid: int) -> None:
    """Until the killed jitterscope's journal is gone: another jitterscope command on this machine may be
    recovering it (holding its lock) while our `restore` finds nothing left to do."""
    from jitterscope.journal import journal_dir

    deadline = time.monotonic() + 30
    while list(journal_dir().glob(f"{pid}-*.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not list(journal_dir().glob(f"{pid}-*.jsonl")), "the journal was never recovered"
    time.sleep(0.2)


def _suspended(pid: int, actuator: str) -> bool:
    return _state(pid) == "T" if actuator == "sigstop" else _frozen(pid) if actuator.startswith("freezer") else True


def _kill_mid_suspension(victim: subprocess.Popen, actuator: str, out: Path) -> subprocess.Popen:
    """Start protect on the victim; once it is really suspended, kill -9 jitterscope (and its controller)."""
    cmd = [
        sys.executable,
        "-m",
        "jitterscope",
        "protect",
        "--best-effort",
        str(victim.pid),
        "--cpus",
        str(BE_CPU),
        "--actuator",
        actuator,
        "--signal",
        "always",
        "--sample",
        "100us",
        "--suspend",
        "900us",
        "--duration",
        "60s",
        "--out",
        str(out),
    ]
    tool = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=own_group())
    try:
        ctl = _controller(tool)
        assert ctl, f"{actuator}: the controller never started: {tool.stderr.read().decode() if tool.poll() else ''}"
        assert _caught(lambda: _suspended(victim.pid, actuator)), f"{actuator}: never caught the program suspended"
        # together (controller first): nothing gets to resume it on its way out; the RT blocker alone is
        # left to die with jitterscope (it must not keep spinning)
        for pid in ([] if actuator == "rt" else ctl) + [tool.pid]:
            os.kill(pid, signal.SIGKILL)
    finally:
        tool.kill()
        tool.wait()
    if actuator == "rt":
        deadline = time.monotonic() + 5
        while any(alive(c) for c in ctl) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(c) for c in ctl), "the RT blocker outlived jitterscope"
    return tool


def _runs_again(victim: subprocess.Popen, affinity: set[int], tool: subprocess.Popen, actuator: str) -> None:
    _wait_recovered(tool.pid)
    assert alive(victim.pid) and _state(victim.pid) in "RS", (actuator, _state(victim.pid))
    assert not _frozen(victim.pid), actuator
    assert os.sched_getaffinity(victim.pid) == affinity, actuator


def test_kill_9_mid_suspension_then_the_next_command_or_restore(tmp_path: Path):
    """Each actuator in turn: kill -9 mid-suspension leaves the program stopped, frozen or pinned (unless
    another jitterscope command on this shared machine recovers it first); the next jitterscope command
    (the next actuator's protect, which recovers interrupted runs before anything else) and, after the
    last one, `jitterscope restore` make it run again as it was."""
    victims: list[subprocess.Popen] = []
    try:
        previous: tuple[subprocess.Popen, set[int], subprocess.Popen, str] | None = None
        for actuator in ("sigstop", "freezer:v2", "freezer:v1", "rt"):
            victims.append(_victim())
            affinity = os.sched_getaffinity(victims[-1].pid)
            tool = _kill_mid_suspension(victims[-1], actuator, tmp_path / actuator)
            if previous is not None:  # this actuator's protect was the next command after it
                _runs_again(*previous)
                _end(previous[0])
            previous = (victims[-1], affinity, tool, actuator)
        assert previous is not None
        proc = jitterscope("restore", timeout=60)
        assert proc.returncode == 0, proc.stderr
        _runs_again(*previous)
        assert not _leftovers()
    finally:
        if _leftovers():
            jitterscope("restore", timeout=60)
        for v in victims:
            if v.poll() is None:
                _end(v)


def test_a_killed_native_controller_is_undone_by_jitterscope_itself(
    victim: subprocess.Popen, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """kill -9 of the controller alone: jitterscope notices, resumes the program and still writes the run.
    (jitterscope runs in this process, the killer in a thread: one interpreter start less.)"""
    from jitterscope.cli import main

    killed: list[int] = []
    records = tmp_path / "run" / RECORDS

    def suspended_on_record() -> bool:  # the controller's own record of a suspension, drained to its file
        try:
            return records.stat().st_size > 0 and len(read_records(records)[1]["suspensions"]) > 0
        except (OSError, JitterscopeError):  # not yet written, or its header not yet
            return False

    def killer() -> None:
        with _off_the_best_effort_cpu():
            deadline = time.monotonic() + 60
            while not killed and time.monotonic() < deadline:
                for c in _children(os.getpid()):
                    try:
                        if Path(f"/proc/{c}/comm").read_text().startswith("jitterscope-pro"):
                            killed.append(c)
                    except OSError:
                        pass
                time.sleep(0.01)
        # some records drained (the run is still written from them), then mid-suspension: kill it
        if killed and _caught(suspended_on_record) and _caught(lambda: _state(victim.pid) == "T"):
            os.kill(killed[0], signal.SIGKILL)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    code = main(
        [
            "protect",
            "--best-effort",
            str(victim.pid),
            "--cpus",
            str(BE_CPU),
            "--actuator",
            "sigstop",
            "--signal",
            "always",
            "--duration",
            "60s",
            "--out",
            str(tmp_path / "run"),
        ]
    )
    t.join(5)
    got = capsys.readouterr()
    # a helper that dies is an interrupted run and a failed command (the run is still written)
    assert code == 1 and killed, got.err
    assert "the run was cut short: the controller died" in got.err
    assert "did not finish its records" in got.out
    assert alive(victim.pid) and _state(victim.pid) in "RS"
    assert (tmp_path / "run" / "samples.parquet").exists()
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["interrupted"] is True and meta["ended_by"].startswith("the controller died"), meta["ended_by"]
    assert not _leftovers()
