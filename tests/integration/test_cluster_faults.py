"""A killed MPI rank loses nothing recoverable and leaves nothing in /tmp or /dev/shm.

Each rank measures in its own run next to the planned output, <out>.rank<N>,
removed once the cluster run is written; when the job dies before (here: rank 1
killed with SIGKILL, after which mpiexec kills the rest), each stays there, its
watchdog undoes what the rank changed, and `jitterscope analyze` turns each
into a complete run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import leaked_mpi_segments
from .test_cluster import _children, _is_measuring_probe, _mpi_reason, _rank_pid, env, mpi_cmd

pytestmark = [
    pytest.mark.skipif(_mpi_reason() is not None, reason=str(_mpi_reason())),
    pytest.mark.slow,
    pytest.mark.timeout(180),
]


def test_killed_rank_loses_nothing_and_leaves_no_scratch(tmp_path: Path) -> None:
    started = time.time()
    out = tmp_path / "cl"
    state = {"JITTERSCOPE_STATE_DIR": str(tmp_path / "state")}
    mpi = subprocess.Popen(
        mpi_cmd(2, "measure", "--duration", "10s", "--timeout", "10s", "--out", str(out)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env(), **state},
    )
    ranks = [_rank_pid(mpi, 0), _rank_pid(mpi, 1)]
    deadline = time.monotonic() + 40
    while not any(_is_measuring_probe(c) for c in _children(ranks[1])):
        assert time.monotonic() < deadline, "rank 1's probe never started"
        time.sleep(0.1)
    time.sleep(1.5)
    os.kill(ranks[1], 9)
    try:
        _, err = mpi.communicate(timeout=60)
    finally:
        if mpi.poll() is None:
            mpi.kill()
    assert mpi.returncode != 0
    assert not out.exists()  # no cluster run: the job failed
    # the killed rank's watchdog undoes its journal at once (no later command needed), and its raw
    # capture is kept beside the output, not lost
    journals = tmp_path / "state" / "journal"
    deadline = time.monotonic() + 60
    while any(journals.glob("*.jsonl")) if journals.is_dir() else False:
        assert time.monotonic() < deadline, _left(journals, ranks)
        time.sleep(0.1)
    restore = subprocess.run(
        [sys.executable, "-m", "jitterscope", "restore"],
        capture_output=True,
        text=True,
        env={**os.environ, **state},
        timeout=60,
        check=False,
    )
    assert restore.returncode == 0, restore.stdout + restore.stderr
    assert "nothing to restore" in restore.stdout + restore.stderr, restore.stdout + restore.stderr
    scratch = [p for p in Path("/tmp").glob("jitterscope-cluster-r*") if any(f"-{pid}-" in p.name for pid in ranks)]
    assert scratch == [], f"scratch directories left behind: {scratch}"
    assert leaked_mpi_segments(started) == []  # nor MPICH's shared memory in /dev/shm
    kept = sorted(tmp_path.glob("cl.rank*"))
    assert out.with_name("cl.rank1") in kept, sorted(tmp_path.iterdir())  # the killed rank's capture
    for k in kept:
        done = subprocess.run(
            [sys.executable, "-m", "jitterscope", "analyze", "--no-report", "--json", str(k)],
            capture_output=True,
            text=True,
            env={**os.environ, **state},
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary["run"]["duration_s"] > 1.0 and sum(c["detours"] for c in summary["cpus"].values()) > 0


def _left(journals: Path, ranks: list[int]) -> str:
    """What the watchdog left: each journal (its header names its process) and which ranks still run."""
    texts = "\n".join(f"{p.name}: {p.read_text()[:1500]}" for p in sorted(journals.glob("*.jsonl")))
    alive = [r for r in ranks if Path(f"/proc/{r}").exists()]
    return f"journals not undone by the watchdog (ranks {ranks}, alive {alive}):\n{texts}"
