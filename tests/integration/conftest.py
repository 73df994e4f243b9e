"""Shared helpers for integration tests: the real tool in a subprocess."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# A shell that starts a job in the background (`make test &`, nohup, some CI runners) starts it with SIGINT
# ignored, and an ignored signal stays ignored across exec: every jitterscope these tests start would then
# ignore the Ctrl-C that the Ctrl-C tests send.  Python's own handler here means children start with the
# default disposition, as they do from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def jitterscope(*args: str, timeout: float = 120, check: bool = False, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "jitterscope", *args], capture_output=True, text=True, timeout=timeout, **kw
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"jitterscope {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def load_json(text: str) -> dict:
    return json.loads(text)


def tracing_reason() -> str | None:
    """Why kernel tracing cannot be tested here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root for tracefs"
    try:
        from jitterscope.tracing.tracefs import tracing_available
    except ImportError:
        return "jitterscope.tracing not built"
    ok, reason = tracing_available()
    return None if ok else f"tracing unavailable: {reason}"


def probed_cpu() -> int:
    """The CPU the tests probe: the highest online one (CPU 0 keeps the test runner)."""
    from jitterscope.sysinfo import online_cpus

    return online_cpus()[-1]


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def assert_dies_with_parent(script: str, what: str) -> None:
    """Run `script` (it starts a native program and prints its pid) in a Python
    process, SIGKILL that process, and check the program follows within 5 s
    (PR_SET_PDEATHSIG): a killed jitterscope must leave nothing spinning."""
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert alive(pid)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid), f"{what} outlived its parent"


def snapshot() -> dict[str, object]:
    """Every system knob the built-in `doe` factors touch, to check that a run restores them."""
    from jitterscope.journal import read_setting

    s: dict[str, object] = {}
    for p in glob.glob("/proc/irq/*/smp_affinity_list"):
        s[p] = Path(p).read_text().strip()
    for p in (
        "/proc/sys/kernel/timer_migration",
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/sys/kernel/mm/ksm/run",
    ):
        if os.path.exists(p):
            s[p] = read_setting(p)
    for t in glob.glob("/proc/[0-9]*/task/[0-9]*"):
        try:
            # Other jitterscope runs and test sessions on this shared machine move themselves
            # (measure keeps its own thread off the probed CPU); every other task is compared.
            cmd = Path(t.split("/task/")[0], "cmdline").read_bytes()
            if b"jitterscope" in cmd or b"pytest" in cmd:
                continue
            s["affinity " + t] = sorted(os.sched_getaffinity(int(t.rsplit("/", 1)[1])))
        except OSError:
            pass
    return s


def changed(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """Knobs that differ (tasks that came or went in between are not compared)."""
    return [k for k in before if k in after and before[k] != after[k]]


def load_pids() -> list[int]:
    """Processes running the `doe` load generators (jitterscope.doe.loads)."""
    out = []
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            if b"jitterscope.doe.loads" in Path(p).read_bytes():
                out.append(int(p.split("/")[2]))
        except OSError:
            pass
    return out


needs_tracing = pytest.mark.skipif(tracing_reason() is not None, reason=str(tracing_reason()))


@pytest.fixture(scope="session")
def tracefs() -> Iterator[Path]:
    """The tracefs directory, set up the way the tool does it: on a fresh machine
    (tracefs not mounted) mounted through the journal, shared with any jitterscope
    run, and unmounted again when the session ends (or by recovery if it is killed)."""
    reason = tracing_reason()
    if reason is not None:
        pytest.skip(reason)
    from jitterscope.journal import Journal
    from jitterscope.tracing.tracefs import ensure_tracefs

    journal = Journal("test session: tracefs")
    root = ensure_tracefs(journal)
    if root is None:
        journal.undo()
        pytest.skip("tracefs is not mounted and cannot be mounted here")
    yield root
    journal.undo()


@pytest.fixture(scope="session")
def loggopsim(tmp_path_factory):
    """LogGOPSim built once per session from ../shared/peers (about 8 s), seed pinned by
    $LOGGOPSIM_SEED; skips, naming what is missing, only where it cannot be built."""
    from tests.support.loggopsim import Unavailable, build

    try:
        return build(tmp_path_factory.mktemp("loggopsim"))
    except Unavailable as err:
        pytest.skip(str(err))
