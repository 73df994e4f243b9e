"""Shared helpers for integration tests: the real tool in a subprocess."""

from __future__ import annotations

import contextlib
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

from tests.support.lanes import spread_priority

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


def sync_program(tmp_path_factory: pytest.TempPathFactory, name: str) -> str:
    """tests/integration/sync_programs/NAME.c built with the system's C compiler (skip without one)."""
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp(name) / name
    src = Path(__file__).parent / "sync_programs" / f"{name}.c"
    subprocess.run([cc, "-O2", "-g", "-pthread", "-o", str(out), str(src)], check=True)
    return str(out)


def load_json(text: str) -> dict:
    return json.loads(text)


def tracing_reason() -> str | None:
    """Why kernel tracing cannot be tested here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root for tracefs"
    from jitterscope.tracing.tracefs import tracing_available  # a missing module is an error, never a skip

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


def tracefs_mounts() -> list[str]:
    """Where tracefs is mounted now (a command must leave these as it found them)."""
    return sorted(ln.split()[1] for ln in Path("/proc/mounts").read_text().splitlines() if ln.split()[2] == "tracefs")


def changed(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """Knobs that differ (tasks that came or went in between are not compared)."""
    return [k for k in before if k in after and before[k] != after[k]]


def load_pids() -> list[int]:
    """Processes running the `doe` load generators (jitterscope.doe.loads)."""
    out = []
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            # `-m jitterscope.doe.loads` exactly: `make py-lowest`, beside the tests, imports every module by
            # name, and its command line names this one too.
            if b"\0-m\0jitterscope.doe.loads\0" in Path(p).read_bytes():
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


# What each file's tests need, as markers (`pytest -m "not root"`, `-m "not slow"`, ...): root (kernel settings,
# scheduling classes, cgroups), tracefs (kernel tracing), native (the C programs), mpi (mpiexec and mpi4py),
# chromium (the browser), slow (soak, long duty cycles, placement comparisons, MPI, browser).  A file that is not
# listed fails tests/unit/test_tiers.py, so a new test file says what it needs.
NEEDS: dict[str, tuple[str, ...]] = {
    "test_bad_input_matrix.py": ("tracefs",),
    "test_check.py": ("root", "native", "tracefs"),
    "test_clock_alignment.py": ("native", "tracefs"),
    "test_cluster.py": ("mpi", "native", "tracefs", "slow"),
    "test_cluster_faults.py": ("mpi", "native", "slow"),
    "test_compare_runs.py": ("native", "tracefs"),
    "test_compare_synthetic_cli.py": (),
    "test_doe_e2e.py": ("root", "native"),
    "test_doe_safety.py": ("root",),
    "test_events_vs_perf.py": ("root", "native", "tracefs"),
    "test_export_cli.py": ("native", "tracefs"),
    "test_fresh_machine.py": ("root", "tracefs", "slow"),
    "test_full_disk.py": ("root",),
    "test_inject.py": ("root", "native"),
    "test_interrupt_messages.py": ("native",),
    "test_inject_bad_input.py": ("native",),
    "test_loggopsim_oracle.py": ("native", "slow"),
    "test_loggopsim_measured.py": ("native", "tracefs", "slow"),
    "test_kill_table.py": ("root", "native", "tracefs"),
    "test_measure_attribution.py": ("native", "tracefs", "slow"),
    "test_measure_bad_input.py": ("native",),
    "test_monitor_unit.py": ("root", "native", "tracefs"),
    "test_monitor_e2e.py": ("native", "tracefs"),
    "test_native_sanitizers.py": ("root", "native"),
    "test_parser_fuzz.py": ("native",),
    "test_no_run_lost.py": ("native", "tracefs", "slow"),
    "test_pipeline_cli.py": ("native", "tracefs", "slow"),
    "test_pipeline_runtime.py": ("native", "slow"),
    "test_place.py": ("root", "native", "slow"),
    "test_probe_detours.py": ("root", "native"),
    "test_probe_layout.py": ("native",),
    "test_probe_lifecycle.py": ("root", "native"),
    "test_probe_memory.py": ("native",),
    "test_priority_option.py": (),
    "test_prometheus.py": ("root", "native", "tracefs"),
    "test_prometheus_rules.py": (),
    "test_protect_actuators.py": ("root", "native", "slow"),
    "test_protect_cli.py": ("root", "native", "slow"),
    "test_protect_event.py": ("root", "native"),
    "test_protect_laws.py": ("native",),
    "test_protect_layout.py": ("native",),
    "test_protect_safety.py": ("root", "native", "slow"),
    "test_ptts_cli.py": (),
    "test_published_noise.py": ("slow",),
    "test_report_browser.py": ("chromium", "slow"),
    "test_restore_cli.py": ("root",),
    "test_second_probe.py": ("native", "tracefs", "slow"),
    "test_simulate_cli.py": (),
    "test_startup_interrupt.py": (),
    "test_sync_lifecycle.py": ("native",),
    "test_sync_primitives.py": ("native",),
    "test_sync.py": ("root", "native", "tracefs", "slow"),
    "test_trace_capture.py": ("root", "native", "tracefs"),
    "test_stream_real_capture.py": ("root", "native", "tracefs"),
    "test_trace_cmd_crosscheck.py": ("native", "tracefs", "slow"),
    "test_trace_layout.py": ("native",),
    "test_trace_session.py": ("root", "tracefs"),
    "test_slurm.py": ("root", "mpi", "native", "tracefs", "slow"),
    "test_tune_audit_scope.py": (),
    "test_tune.py": ("root",),
    "test_tune_verify.py": ("root", "native", "tracefs", "slow"),
    "test_wheel.py": ("root", "native", "slow"),
    "test_whatif_cache.py": ("native", "slow"),
    "test_whatif_polling.py": ("native", "tracefs"),
    "test_whatif_dvfs.py": ("native", "slow"),
    "test_whatif_replay.py": ("native",),
}


# Files whose tests neither measure, pin, inject nor change a kernel setting: `make integration` (pytest-xdist,
# --dist loadgroup) spreads them over every CPU, while all other files run one test at a time in the "machine"
# group, so two measurements never share the probed CPU and a test that checks that nothing on the machine
# changed never sees another test's change.  The spread tests load the CPUs as any busy host would.  A single
# test of a machine file that is free alike carries @pytest.mark.free (the machine group is the suite's
# longest path; every free test taken off it shortens the suite).
FREE = {
    "test_ptts_cli.py",
    "test_published_noise.py",
    "test_prometheus_rules.py",
    "test_priority_option.py",
    "test_startup_interrupt.py",
    "test_tune_audit_scope.py",
    "test_simulate_cli.py",
    "test_report_browser.py",
    "test_protect_laws.py",
    "test_whatif_replay.py",
    "test_whatif_cache.py",
    "test_probe_layout.py",
    "test_trace_layout.py",
    "test_protect_layout.py",
    "test_inject_bad_input.py",  # every case fails before the injector starts
    "test_parser_fuzz.py",  # the sanitized parser on files: CPU only, no kernel state
    "test_loggopsim_oracle.py",  # two simulators on made-up noise (the measured run is in a machine file)
    "test_pipeline_runtime.py",  # the runtime's own threads (SCHED_OTHER), outputs checked bit for bit
    "test_compare_synthetic_cli.py",  # made-up runs in its own tmp_path
    "test_full_disk.py",  # made-up runs written to a 1 MiB tmpfs it mounts in its own tmp_path
}
# FREE files that need root only for something of their own (a mount in their tmp_path), not the machine's.
PRIVATE_ROOT = {"test_full_disk.py"}


_SESSION_START_US = time.time_ns() // 1000


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The suite leaves no journal behind in the machine's state directory: one whose process is gone was
    left by a test that killed a jitterscope there (SIGKILL, no watchdog) instead of ending it; the next
    jitterscope command would undo it, and a user's machine would say so.  Checked once every worker is
    done (the controller), for journals opened during this session only (another user's are theirs)."""
    if hasattr(session.config, "workerinput"):
        return
    from jitterscope.journal import stale_journals

    ours = [p for p in stale_journals() if int(p.stem.rsplit("-", 1)[-1] or 0) >= _SESSION_START_US]
    if ours:
        session.config.get_terminal_writer().line(
            "journals left behind by this session's tests (`jitterscope restore` undoes them): "
            + ", ".join(str(p) for p in ours),
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads xdist_group to schedule
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name not in NEEDS:
            continue
        for need in NEEDS[item.path.name]:
            item.add_marker(getattr(pytest.mark, need))
        if not is_free(item):
            item.add_marker(pytest.mark.xdist_group("machine"))


def is_free(item: pytest.Item) -> bool:
    """Whether `item` runs beside the machine group rather than in it."""
    return item.path.name in FREE or item.get_closest_marker("free") is not None


def wait_for_comm(name: str, timeout: float = 60) -> int:
    """The pid of a process named `name` (its comm), once one runs: a command started in the background
    on a busy machine may take seconds to get there, and a measurement started before it would miss it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for comm in Path("/proc").glob("[0-9]*/comm"):
            try:
                if comm.read_text().strip() == name:
                    return int(comm.parent.name)
            except OSError:
                continue
        time.sleep(0.05)
    raise AssertionError(f"no process named {name} within {timeout} s")


@pytest.fixture(scope="session")
def loggopsim(tmp_path_factory):
    """LogGOPSim built once per session (by whichever worker asks first) from ../shared/peers (about 8 s), seed
    pinned by $LOGGOPSIM_SEED; skips, naming what is missing, only where it cannot be built."""
    from tests.support.loggopsim import Unavailable, build
    from tests.support.once import once

    try:
        return once(tmp_path_factory, "loggopsim", build)
    except Unavailable as err:
        pytest.skip(str(err))


def inject_argv(cpu: int, period: str, busy: str, *extra: str) -> list[str]:
    """The command line of `jitterscope inject` on `cpu` (one copy for every test that starts a known daemon)."""
    return [
        sys.executable,
        "-m",
        "jitterscope",
        "inject",
        "--cpu",
        str(cpu),
        "--period",
        period,
        "--busy",
        busy,
        *extra,
    ]


@pytest.fixture(autouse=True)
def _free_tests_beside_the_machine_group(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A free test's jitterscope runs keep their journals in a state directory of their own: the state
    directory is where a command recovers what killed runs left, and a free test runs beside the machine
    tests that kill runs on purpose (a `simulate` with bad input once restored a killed `doe`'s 24 changes
    and printed a line for each, before the test_doe_safety that killed it could check its own restore).
    It also runs at the spread tests' lower priority (tests/support/lanes.py)."""
    if not is_free(request.node):
        yield
        return
    monkeypatch.setenv("JITTERSCOPE_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    with spread_priority():
        yield


HYDRA_LEFTOVERS = "/tmp/hydra_hwloc_xmlfile_*"  # MPICH's mpiexec writes it for its proxies (TMPDIR not honoured)


@pytest.fixture(autouse=True)
def _hydra_files_of_aborted_jobs(request: pytest.FixtureRequest) -> Iterator[None]:
    """MPICH's hydra leaves its topology file in /tmp when a job ends by MPI_Abort (as a cluster job whose
    rank fails does; a job that ends normally leaves none): 92 of them gathered in a day of CI runs.  The
    MPI tests (marked `mpi`) remove those their own jobs left (they run one at a time, in the machine group)."""
    if request.node.get_closest_marker("mpi") is None:
        yield
        return
    before = set(glob.glob(HYDRA_LEFTOVERS))
    yield
    for f in set(glob.glob(HYDRA_LEFTOVERS)) - before:
        with contextlib.suppress(OSError):
            os.unlink(f)


def leaked_mpi_segments(since: float) -> list[str]:
    """MPICH shared-memory segments in /dev/shm made since `since` (time.time()) that no process maps any more:
    what an MPI job left there for good (MPI tests run one at a time, in the "machine" group)."""
    from jitterscope.cluster.mpi import SHM_PREFIX

    made = {str(p) for p in Path(SHM_PREFIX).parent.glob(Path(SHM_PREFIX).name + "*") if p.stat().st_mtime >= since}
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            made -= {line.rsplit(" ", 1)[-1] for line in maps.read_text().splitlines()}
        except OSError:  # a process that ended meanwhile
            continue
    return sorted(made)
