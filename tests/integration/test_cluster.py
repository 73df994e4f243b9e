"""`cluster measure` and `cluster bsp` under real MPI (mpiexec, oversubscribed on this VM).

One machine stands in for several nodes: JITTERSCOPE_NODE_NAME=node{rank} gives
every rank its own host name, and a node is (host, CPU).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import svg

from .conftest import leaked_mpi_segments, needs_tracing

VENV_BIN = Path(sys.executable).parent
MPIEXEC = shutil.which("mpiexec", path=str(VENV_BIN)) or shutil.which("mpiexec")


def _mpi_reason() -> str | None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py not installed (make mpi, or pip install 'jitterscope[mpi]')"
    if MPIEXEC is None:
        return "mpiexec not found"
    return None


pytestmark = [pytest.mark.skipif(_mpi_reason() is not None, reason=str(_mpi_reason())), pytest.mark.slow]
INJ_NAME = "js-cl-noise"  # distinct from other tests' injectors that may run at the same time


def mpi_cmd(n: int, *args: str) -> list[str]:
    return [str(MPIEXEC), "-n", str(n), sys.executable, "-m", "jitterscope", "cluster", *args]


# The jobs' journals go to a directory of this module's own: a rank these tests kill
# leaves a stale journal, and its recovery (which keeps the rank's capture and says so
# on stderr) belongs here, not to whichever jitterscope command runs next elsewhere.
STATE: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def _recover_what_killed_ranks_left() -> Iterator[None]:
    STATE["JITTERSCOPE_STATE_DIR"] = tempfile.mkdtemp(prefix="jitterscope-cluster-tests-")
    yield
    subprocess.run(
        [sys.executable, "-m", "jitterscope", "restore"], env=env(), capture_output=True, timeout=120, check=False
    )
    shutil.rmtree(STATE.pop("JITTERSCOPE_STATE_DIR"), ignore_errors=True)


def env() -> dict[str, str]:
    return {**os.environ, "JITTERSCOPE_NODE_NAME": "node{rank}", **STATE}


def run_mpi(n: int, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(mpi_cmd(n, *args), capture_output=True, text=True, timeout=timeout, env=env())


def check_gathered(out: Path, n: int, summary: dict) -> None:
    import pyarrow.dataset as ds

    meta = json.loads((out / "meta.json").read_text())
    assert meta["kind"] == "cluster"
    assert sorted(x["rank"] for x in meta["nodes"]) == list(range(n))
    assert sorted(r["rank"] for r in summary["nodes"]) == list(range(n))
    assert summary["run"]["nodes"] == n
    table = ds.dataset(out / "detours", partitioning="hive").to_table()
    keys = {(h, c) for h, c in zip(table.column("host").to_pylist(), table.column("cpu").to_pylist())}
    # Every node that saw a detour is in the dataset, under its own (host, cpu).
    for row in summary["nodes"]:
        if row["detours"]:
            assert (row["host"], row["cpu"]) in keys
            got = table.filter((ds.field("host") == row["host"]) & (ds.field("cpu") == row["cpu"])).num_rows
            assert got == row["detours"]
        node_dir = out / "nodes" / f"host={row['host']}" / f"cpu={row['cpu']}"
        node_sum = json.loads((node_dir / "summary.json").read_text())
        assert node_sum["cpus"][str(row["cpu"])]["detours"] == row["detours"]


def test_two_ranks_gather_every_rank(tmp_path: Path) -> None:
    out = tmp_path / "c2"
    proc = run_mpi(2, "measure", "--duration", "1s", "--no-trace", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # only rank 0 prints, and only JSON
    check_gathered(out, 2, summary)
    assert {r["node"] for r in summary["nodes"]} == {"node0:1", "node1:0"}  # default: local rank r -> CPU (r+1) mod 2
    # report and compare understand cluster runs.
    rep = subprocess.run([sys.executable, "-m", "jitterscope", "report", str(out)], capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    page = (out / "report.html").read_text()
    assert "node0:1" in page and "node1:0" in page
    assert svg.read(out / "report-heatmap.svg").shows("noise per node and source", "node0:1", "node1:0")
    cmp = subprocess.run(
        [sys.executable, "-m", "jitterscope", "compare", str(out), str(out), "--json"], capture_output=True, text=True
    )
    assert cmp.returncode == 0, cmp.stderr
    diff = json.loads(cmp.stdout)
    assert diff["kind"] == "cluster" and {x["node"] for x in diff["nodes"]} == {"node0:1", "node1:0"}
    assert all(x["delta_ppm"] == 0 for x in diff["nodes"])


@needs_tracing
def test_four_ranks_injector_node_is_the_outlier(tmp_path: Path) -> None:
    from jitterscope.measure.inject import Injector

    out = tmp_path / "c4"
    # Rank 0 alone on CPU 1 with the injector; ranks 1-3 share CPU 0 (this VM has two CPUs).
    with Injector(cpu=1, period_ns=10e6, busy_ns=1e6, duration_ns=None, name=INJ_NAME):
        proc = run_mpi(4, "measure", "--duration", "2s", "--cpu-map", "1,0,0,0", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    check_gathered(out, 4, summary)
    outliers = summary["outliers"]
    assert outliers, summary["outlier_method"]
    top = outliers[0]
    assert top["node"] == "node0:1", outliers
    differing = [s["source"] for s in top["sources"]]
    assert f"thread:{INJ_NAME}" in differing, top
    # No other node differs because of the injector.
    assert all(f"thread:{INJ_NAME}" not in [s["source"] for s in o["sources"]] for o in outliers[1:])
    inj = next(s for s in summary["sources"] if s["name"] == INJ_NAME)
    assert inj["nodes"] == 1 and inj["max_node"] == "node0:1"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for SCHED_FIFO ranks")
def test_bsp_slowdown_predicted_by_simulator(tmp_path: Path) -> None:
    from jitterscope.measure.inject import Injector

    out = tmp_path / "bsp"
    # 10% injected (SCHED_FIFO 50) on rank 0's CPU, not a multiple of the phase.  The
    # ranks run SCHED_FIFO 10 so that other tests' CPU-bound processes on this
    # 2-CPU VM, which react to the job (CFS fair share) rather than being
    # exogenous noise, do not dominate.
    with Injector(cpu=1, period_ns=7e6, busy_ns=0.7e6, duration_ns=None, name=INJ_NAME):
        proc = run_mpi(
            2, "bsp", "--phase", "5ms", "--phases", "300", "--priority", "fifo:10", "--out", str(out), "--json"
        )
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    m = s["measured"]
    assert m["slowdown"] > 0.05, m  # the injector costs the job at least half its 10%
    node0 = next(n for n in s["nodes"] if n["rank"] == 0)
    assert node0["slowest_share"] > 0.5, s["nodes"]
    # Stated accuracy (docs/commands/cluster.md): the trace-driven prediction of the
    # runtime within 7%, the fitted one within 8%, of the measured runtime.
    td, fit = s["predictions"]["trace_driven"], s["predictions"]["fitted"]
    assert abs(td["runtime_rel_error"]) < 0.07, (m, td)
    assert abs(fit["runtime_rel_error"]) < 0.08, (m, fit)
    phases = __import__("pyarrow.parquet", fromlist=["x"]).read_table(out / "bsp_phases.parquet")
    assert phases.num_rows == 2 * 300


def _descends_from(pid: int, ancestor: int) -> bool:
    """True when `ancestor` is a parent, grandparent... of `pid` (so a rank left
    over from an earlier job is never picked)."""
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if pid == ancestor:
            return True
    return False


def _rank_pid(mpi: subprocess.Popen, rank: int, timeout: float = 20) -> int:
    """The pid of the jitterscope process of `rank` (from PMI_RANK in its environment)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                cmd = (d / "cmdline").read_bytes()
                if b"jitterscope\x00cluster" not in cmd:
                    continue
                envs = (d / "environ").read_bytes().split(b"\x00")
            except OSError:
                continue
            if f"PMI_RANK={rank}".encode() in envs and _descends_from(int(d.name), mpi.pid):
                return int(d.name)
        time.sleep(0.1)
    raise AssertionError(f"rank {rank} never appeared")


def _children(pid: int) -> list[int]:
    try:
        tasks = Path(f"/proc/{pid}/task").iterdir()
        return [int(c) for t in tasks for c in (t / "children").read_text().split()]
    except OSError:
        return []


def test_hanging_rank_fails_the_job_quickly(tmp_path: Path) -> None:
    started = time.time()
    mpi = subprocess.Popen(
        mpi_cmd(2, "bsp", "--phase", "5ms", "--phases", "4000", "--timeout", "3s", "--out", str(tmp_path / "hang")),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    pid = _rank_pid(mpi, 1)
    # Past MPI's start-up (which has no timeout of ours) once the work loop's library is loaded: from there
    # every step of the job waits at most --timeout.  A loaded CI host took over 2.5 s to get there.
    deadline = time.monotonic() + 60
    while "libjsbspwork.so" not in Path(f"/proc/{pid}/maps").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # calibrating or inside the phases
    t0 = time.monotonic()
    os.kill(pid, 19)  # SIGSTOP: rank 1 hangs
    try:
        _, err = mpi.communicate(timeout=30)
    finally:
        if mpi.poll() is None:
            mpi.kill()
    took = time.monotonic() - t0
    assert mpi.returncode != 0
    # On a loaded machine start-up can outlast the 2.5 s: rank 1 is then stopped during calibration,
    # which must fail the job just as quickly (a CI-like run under load saw exactly that).
    in_phases = "jitterscope: error: cluster bsp: a barrier did not complete within 3 s" in err
    in_calibration = "jitterscope: error: cluster bsp: rank 1 (node1) did not" in err and "within 3 s" in err
    assert in_phases or in_calibration, err
    assert took < 15, took
    assert not (tmp_path / "hang").exists()
    assert leaked_mpi_segments(started) == []  # MPI_Abort does not finalize: the names went at start-up


def _is_measuring_probe(pid: int) -> bool:
    try:  # the probe measuring (not the one-off TSC calibration run)
        return b"jitterscope-probe" in (cmd := Path(f"/proc/{pid}/cmdline").read_bytes()) and b"--out" in cmd
    except OSError:
        return False


def test_failing_rank_fails_the_job_with_its_reason(tmp_path: Path) -> None:
    started = time.time()
    mpi = subprocess.Popen(
        mpi_cmd(2, "measure", "--duration", "8s", "--no-trace", "--timeout", "10s", "--out", str(tmp_path / "fail")),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    pid = _rank_pid(mpi, 1)
    deadline = time.monotonic() + 20
    probe = None
    while probe is None and time.monotonic() < deadline:
        probe = next((c for c in _children(pid) if _is_measuring_probe(c)), None)
        time.sleep(0.1)
    assert probe is not None, "rank 1's probe never started"
    time.sleep(0.5)
    t0 = time.monotonic()
    os.kill(probe, 9)  # rank 1's measurement dies mid-run
    try:
        _, err = mpi.communicate(timeout=30)
    finally:
        if mpi.poll() is None:
            mpi.kill()
    assert mpi.returncode != 0
    assert "jitterscope: error: cluster measure: rank 1 on node1: probe failed" in err, err
    assert time.monotonic() - t0 < 10
    assert not (tmp_path / "fail").exists()
    assert leaked_mpi_segments(started) == []
