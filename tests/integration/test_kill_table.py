"""SIGKILL each mode at several points of its session lifecycle (session.py); after each kill, nothing it
stopped, froze, pinned, throttled or started is left so (its watchdog undoes the journal at once, without
"the next jitterscope command"), `analyze` gives a complete run or one line saying what is lost, and
`report` and `compare` read the result (a run, or one line).

Each kill point waits for a state the mode makes observable (a journal entry, a file, meta.json's stage,
a task seen stopped), never for a guessed time.  The jitterscope killed runs in its own state directory,
so its journal (and its undoing) is this test's alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from jitterscope.measure.probe_format import HEADER_DTYPE
from jitterscope.native_bin import native_bin
from jitterscope.sysinfo import online_cpus
from jitterscope.tracing.tracefs import tracing_available

from .conftest import tracefs_mounts

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="protect and place stop and move tasks: needs root"),
    pytest.mark.skipif(len(online_cpus()) < 2, reason="needs two CPUs"),
]

CPU = online_cpus()[-1]
PIPELINE = str(Path(__file__).resolve().parents[2] / "examples" / "pipeline" / "appendix.yaml")
WAIT_S = 60.0  # the longest any observable state may take on a loaded machine


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` (by parent links), now."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            parents[int(d.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p and c not in out]
        out.update(kids)
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        return _state(pid) != "Z"
    except OSError:
        return False


def _cgroup(pid: int) -> str:
    return Path(f"/proc/{pid}/cgroup").read_text()


def _our_cgroups(pid: int) -> list[str]:
    """The cgroups (freezer, cpu.max) of the jitterscope `pid`, which is gone: they are named
    jitterscope-MODE-PID-...; another jitterscope on this shared machine has its own."""
    out = []
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/freezer"), Path("/sys/fs/cgroup/cpu")):
        if root.is_dir():
            out += [str(p) for p in root.glob(f"jitterscope-*-{pid}-*") if p.is_dir()]
    return out


def _our_trace_instance(pid: int) -> bool:
    """The killed jitterscope's private trace instance is still there."""
    return any(Path(root, "instances", f"jitterscope-{pid}").exists() for root in TRACEFS)


TRACEFS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")


def _journal(state: Path) -> list[Path]:
    d = state / "journal"
    return sorted(d.glob("*.jsonl")) if d.is_dir() else []


def _journalled(state: Path) -> bool:
    """The session has made its first change (a journal entry after the header)."""
    for p in _journal(state):
        try:
            if len(p.read_text().splitlines()) >= 2:
                return True
        except OSError:
            pass
    return False


def _stage(out: Path) -> str:
    try:
        return str(json.loads((out / "meta.json").read_text()).get("incomplete", ""))
    except (OSError, ValueError):
        return ""


def _any(out: Path, pattern: str) -> bool:
    return any(out.glob(pattern))


@dataclass(frozen=True)
class Point:
    """One row of the table: a mode, when it is killed, how to see that moment, what analyze must give."""

    mode: str
    when: str
    reached: Callable[[Path, Path, list[int]], bool]  # (run dir, state dir, victims)
    rebuilt: bool  # analyze gives a complete run (else: one line saying what is lost, exit 2)
    closes: bool = False  # the moment may pass before the kill lands (the mode then ends normally)


def _stopped(out: Path, state: Path, victims: list[int]) -> bool:
    return any(_state(v) == "T" for v in victims)


TABLE = [
    Point("protect", "start-up", lambda o, s, v: _journalled(s), rebuilt=False),
    Point("protect", "capture", _stopped, rebuilt=True),
    Point("protect", "controller ended", lambda o, s, v: _stage(o) == "analysing", rebuilt=True, closes=True),
    Point("protect", "writing", lambda o, s, v: _any(o, "*.parquet") or _any(o, ".*.tmp"), rebuilt=True, closes=True),
    Point("place", "start-up", lambda o, s, v: _journalled(s), rebuilt=False),
    Point("place", "capture", _stopped, rebuilt=True),
    Point("place", "analysis", lambda o, s, v: _stage(o) == "analysing", rebuilt=True, closes=True),
    Point("measure", "start-up", lambda o, s, v: _journalled(s), rebuilt=False),
    Point("measure", "capture", lambda o, s, v: _probe_wrote(o), rebuilt=True),
    Point("measure", "probe ended", lambda o, s, v: (o / "detours.end.json").exists(), rebuilt=True, closes=True),
    Point("measure", "writing", lambda o, s, v: _writing(o), rebuilt=True, closes=True),
]


def _probe_wrote(d: Path) -> bool:
    """The probe has written records: detours.raw past its header (killed while it was still empty, once
    under a CPU hog, nothing was measured, and analyze rightly says so in one line: the start-up row's case)."""
    try:
        return (d / "detours.raw").stat().st_size > HEADER_DTYPE.itemsize
    except OSError:
        return False


def _writing(d: Path) -> bool:
    return _any(d, "*.parquet") or _any(d, ".*.tmp")


def _cmd_started(out: Path) -> list[int]:
    """The pids of the sync run's CMD processes: the interposer opens sync-PID-TSC.raw as CMD starts."""
    return [int(p.name.split("-")[1]) for p in (out / "sync-raw").glob("sync-*.raw")]


def _cmd_ended(out: Path) -> bool:
    pids = _cmd_started(out)
    return bool(pids) and not any(_alive(p) for p in pids)


# sync: CMD is `sleep`, traced.  A killed jitterscope leaves CMD to run to its end (sync/runner.py), so a
# row waits for it: it sleeps a second, long enough for the capture row to see it running.
TABLE += [
    Point("sync", "start-up", lambda o, s, v: _journalled(s), rebuilt=False),
    Point("sync", "capture", lambda o, s, v: bool(_cmd_started(o)), rebuilt=True),
    Point("sync", "workload ended", lambda o, s, v: _cmd_ended(o), rebuilt=True, closes=True),
    Point("sync", "analysis", lambda o, s, v: _stage(o) == "analysing", rebuilt=True, closes=True),
    Point("sync", "writing", lambda o, s, v: _writing(o), rebuilt=True, closes=True),
]
SYNC_CMD = ["sleep", "1"]


# place appends what it sees to place.raw as it runs (raw first) and builds its tables from it as it
# analyses: killed while it writes them, `analyze` rebuilds them from place.raw.
TABLE += [Point("place", "writing", lambda o, s, v: _writing(o), rebuilt=True, closes=True)]


# pipeline run --trace: the trace instance is its first journal entry; meta.json's stage says the runtime
# runs (its heartbeat file comes earlier: killed then, it may die before its first iteration, and nothing
# was run); it writes raw/result.bin as it ends (also when jitterscope is killed: it ends with its parent).
TABLE += [
    Point("pipeline", "start-up", lambda o, s, v: _journalled(s), rebuilt=False),
    Point("pipeline", "capture", lambda o, s, v: _stage(o) in ("running", "capturing"), rebuilt=True),
    Point("pipeline", "runtime ended", lambda o, s, v: (o / "raw" / "result.bin").exists(), rebuilt=True, closes=True),
    Point("pipeline", "analysis", lambda o, s, v: _stage(o) == "analysing", rebuilt=True, closes=True),
    Point("pipeline", "writing", lambda o, s, v: _writing(o), rebuilt=True, closes=True),
]


def _rank(out: Path) -> Path:
    """A one-rank cluster job's own run (a measurement), next to the cluster run it plans."""
    return out.with_name(f"{out.name}.rank0")


# cluster measure as a one-rank job (MPI singleton): the rank's run is a measurement in <out>.rank0 until
# rank 0 has written the cluster run <out>; the last row kills it while it writes <out>.  Untraced: the
# rank's session is measure's, whose trace the measure rows kill; so start-up is its raw capture begun.
TABLE += [
    Point("cluster", "start-up", lambda o, s, v: (_rank(o) / "capture.json").exists(), rebuilt=False),
    Point("cluster", "capture", lambda o, s, v: _probe_wrote(_rank(o)), rebuilt=True),
    Point(
        "cluster", "probe ended", lambda o, s, v: (_rank(o) / "detours.end.json").exists(), rebuilt=True, closes=True
    ),
    Point("cluster", "analysis", lambda o, s, v: _writing(_rank(o)), rebuilt=True, closes=True),
    Point("cluster", "writing", lambda o, s, v: o.exists(), rebuilt=True, closes=True),
]


# A row that waits for the end (`closes`) of protect or place runs as briefly as the mode allows: most
# of its time is the wait.  A row killed mid-run has time to spare.  Measure keeps 1.5 s in every row:
# its probe outlives a killed parent until its own duration ends (the row waits for every child), and
# a 300 ms measure was seen, under load, not to end its probe within WAIT_S (not yet explained).
LONG, SHORT, MEASURE = "10s", "300ms", "1500ms"


def _argv(point: Point, victims: list[int]) -> list[str]:
    duration = MEASURE if point.mode in ("measure", "cluster") else SHORT if point.closes else LONG
    if point.mode == "pipeline":  # 300 iterations take about as long as SHORT; a million, far longer than LONG
        iterations = "300" if point.closes else "1000000"
        return [
            "pipeline",
            "run",
            PIPELINE,
            "--iterations",
            iterations,
            "--wait",
            "futex",
            "--no-timers",
            "--trace",
            "--no-report",
        ]
    if point.mode == "cluster":
        return ["cluster", "measure", "--cpu-map", str(CPU), "--duration", duration, "--no-trace"]
    if point.mode == "protect":
        return ["protect", "--best-effort", str(victims[0]), "--cpus", str(CPU), "--actuator", "sigstop"] + [
            "--signal",
            "always",
            "--duration",
            duration,
        ]
    if point.mode == "place":
        tasks = ",".join(map(str, victims))
        return ["place", "--policy", "L", "--quantum", "50ms", "--tasks", tasks, "--duration", duration]
    if point.mode == "sync":
        return ["sync", "--cpus", str(CPU), "--no-report", "--", *SYNC_CMD]
    return ["measure", "--cpus", str(CPU), "--duration", duration, "--no-report"]


@pytest.fixture(scope="module")
def victims() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Three spinning programs given by PID (protect suspends the first, place's OBS-L stops some), at
    nice 19: three spinners on two CPUs must not slow every jitterscope start-up in the table."""
    procs = [
        subprocess.Popen(
            [str(native_bin("jitterscope-spinloop"))], stdout=subprocess.DEVNULL, preexec_fn=lambda: os.nice(19)
        )
        for _ in range(3)
    ]
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def _until(
    cond: Callable[[], bool], what: str | Callable[[], str], proc: subprocess.Popen[bytes] | None = None
) -> None:
    deadline = time.monotonic() + WAIT_S
    while not cond():
        if proc is not None and proc.poll() is not None:
            return  # it ended first: the caller decides whether that may happen
        assert time.monotonic() < deadline, f"never reached: {what if isinstance(what, str) else what()}"
        time.sleep(0.005)


def _left(point: Point, state: Path, err: bytes) -> str:
    """What the watchdog left undone: the journals and what the killed run (and its restore) said."""
    texts = "\n".join(f"{p}:\n{p.read_text()[-2000:]}" for p in _journal(state))
    return f"{point}: journal not undone by its watchdog\n{texts}\nstderr:\n{err.decode()[-3000:]}"


def _one_line(code: int, err: str, what: str) -> None:
    """Exit 0, or exit 2 with a single line (no traceback)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code in (0, 2), (what, code, err)
    assert "Traceback" not in err, (what, err)
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("jitterscope: error: "), (what, err)


def _needs(mode: str) -> None:
    """Skip, naming it, a row whose mode needs what this machine lacks."""
    if mode == "cluster":
        pytest.importorskip("mpi4py", reason="cluster measure needs mpi4py (make mpi)")
    if mode == "pipeline" and not tracing_available()[0]:
        pytest.skip(f"pipeline rows trace the kernel (their first journal entry): {tracing_available()[1]}")


@pytest.mark.parametrize("point", TABLE, ids=[f"{p.mode}-{p.when.replace(' ', '-')}" for p in TABLE])
def test_kill_9(
    point: Point,
    victims: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from jitterscope.cli import main

    _needs(point.mode)
    state, out = tmp_path / "state", tmp_path / "run"
    pids = [v.pid for v in victims]
    before = {p: (os.sched_getaffinity(p), _cgroup(p)) for p in pids}
    tracefs_before = tracefs_mounts()  # tests that change the machine run one at a time
    env = {**os.environ, "JITTERSCOPE_STATE_DIR": str(state)}

    argv = _argv(point, pids)
    opts_end = argv.index("--") if "--" in argv else len(argv)  # options before a CMD
    argv[opts_end:opts_end] = ["--out", str(out)]
    # stderr to a file, not a pipe: the killed jitterscope's children (the watchdog's restore) inherit it, and
    # reading a pipe to its end waited for them (30 s under a CPU hog)
    errfile = tmp_path / "stderr"
    with errfile.open("wb") as errf:
        tool = subprocess.Popen(
            [sys.executable, "-m", "jitterscope", *argv], env=env, stdout=subprocess.DEVNULL, stderr=errf
        )  # in this session (and autogroup): the spinners' nice 19 then leaves it the CPU
    try:
        _until(lambda: point.reached(out, state, pids), f"{point.mode} {point.when}", tool)
        below = _descendants(tool.pid)
        tool.kill()
        tool.wait(timeout=30)
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()
    if tool.returncode != -signal.SIGKILL:  # the moment passed before the kill: the run ended by itself
        err = errfile.read_bytes()
        assert point.closes and tool.returncode == 0, f"{point}: exit {tool.returncode}\n{err.decode()[-3000:]}"
    # the watchdog (not a later command) undoes the journal; every child ends
    _until(lambda: not _journal(state), lambda: _left(point, state, errfile.read_bytes()))
    _until(lambda: not any(_alive(p) for p in below - set(pids)), "every child of the killed jitterscope ended")
    for p in pids:
        assert _alive(p) and _state(p) != "T", (point, p, _state(p))
        assert (os.sched_getaffinity(p), _cgroup(p)) == before[p], (point, p)
    assert not _our_cgroups(tool.pid), point
    assert not _our_trace_instance(tool.pid), point
    # a tracefs it mounted is unmounted (killed between mounting and registering it, it was left mounted)
    assert tracefs_mounts() == tracefs_before, point
    # analyze: a complete run, or one line saying what is lost
    monkeypatch.setenv("JITTERSCOPE_STATE_DIR", str(state))
    for run, complete in _left_runs(point, out, ended=tool.returncode == 0):
        capsys.readouterr()
        code = main(["analyze", str(run), "--no-report"])
        got = capsys.readouterr()
        if complete:
            assert code == 0, (point, run, got.err)
            assert "Traceback" not in got.err
        else:
            _one_line(code, got.err, f"analyze {run.name} after {point}")
        for cmd in (["report", str(run), "--out", str(tmp_path / "r.html")], ["compare", str(run), str(run)]):
            code = main(cmd)
            got = capsys.readouterr()
            _one_line(code, got.err, f"{cmd[0]} {run.name} after {point}")  # compare refuses a run of no time
            if cmd[0] == "report" and complete and point.mode != "protect":  # (protect has no page)
                assert code == 0, (point, run, got.err)
        if point.mode == "place" and point.when == "capture":
            _place_rebuilt(run)


def _place_rebuilt(run: Path) -> None:
    """A place run killed mid-capture keeps what it saw (place.raw): its decisions, its tasks' states, and
    meta.json says it was interrupted and what only its end knew."""
    from jitterscope.rundir import load_run

    r = load_run(run)
    assert r.table("decisions").num_rows > 0  # killed as the first tasks stop: no quantum need have ended
    assert len(r.summary["tasks"]) == 3 and not (run / "place.raw").exists()
    assert r.meta["interrupted"] and any(m.startswith("its end") for m in r.meta["recovered"]["missing"]), r.meta


def _left_runs(point: Point, out: Path, ended: bool) -> list[tuple[Path, bool]]:
    """The run directories a killed (or ended) mode left, each with whether `analyze` must make it a
    complete run.  A cluster job killed before its end leaves its rank's run, and <out> if rank 0 had
    begun writing it (an unfinished cluster run: one line)."""
    if point.mode != "cluster" or ended:
        return [(out, point.rebuilt or ended)]
    return [(_rank(out), point.rebuilt)] + ([(out, False)] if out.exists() else [])


def test_kill_9_of_check_leaves_no_scratch(tmp_path: Path) -> None:
    """`jitterscope check` measures into a journalled scratch directory: killed mid-measurement, its
    watchdog removes it (the raw capture is moved to the state directory's kept/, not lost)."""
    state, tmp = tmp_path / "state", tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "JITTERSCOPE_STATE_DIR": str(state), "TMPDIR": str(tmp)}
    tool = subprocess.Popen(
        [sys.executable, "-m", "jitterscope", "check", "--cpus", str(CPU), "--duration", "3s", "--max-noise", "50%"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _until(lambda: _any(tmp, "jitterscope-check-*/run/capture.json"), "check measuring", tool)
        assert tool.poll() is None, tool.communicate()[1].decode()
        tool.kill()
        tool.wait(timeout=30)  # not communicate(): its children (the watchdog's restore) hold stderr open
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()
    _until(lambda: not _journal(state), "the killed check's journal undone by its watchdog")
    assert not list(tmp.glob("jitterscope-check-*"))
    assert list((state / "kept").glob("jitterscope-check-*/capture.json"))
