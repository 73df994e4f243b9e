"""`srun -n 2 jitterscope cluster measure` on a real one-node Slurm (munged, slurmctld, slurmd started by
the test on localhost, 2 CPUs): a complete cluster run, as under mpiexec; and srun without a PMI plugin
refused in one line instead of every task writing a cluster run of its own."""

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

from .conftest import jitterscope, needs_tracing, probed_cpu
from .slurm_cluster import LocalSlurm, SlurmUnavailable, local_slurm, missing_programs

pytestmark = [pytest.mark.slow, pytest.mark.root]
JITTERSCOPE = shutil.which("jitterscope", path=str(Path(sys.executable).parent)) or "jitterscope"


def _mpi_reason() -> str | None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py not installed (make mpi, or pip install 'jitterscope[mpi]')"
    if len(os.sched_getaffinity(0)) < 2:
        return "needs 2 CPUs for 2 ranks"
    return None


@pytest.fixture(scope="module")
def slurm() -> Iterator[LocalSlurm]:
    if _mpi_reason():
        pytest.skip(str(_mpi_reason()))
    state = tempfile.mkdtemp(prefix="jitterscope-slurm-tests-")  # journals of ranks this module's jobs end
    try:
        with local_slurm(cpus=2) as s:
            s.env["JITTERSCOPE_STATE_DIR"] = state
            yield s
    except SlurmUnavailable as err:
        pytest.skip(f"Slurm could not start: {err}")
    finally:
        subprocess.run([JITTERSCOPE, "restore"], env={**os.environ, "JITTERSCOPE_STATE_DIR": state},
                       capture_output=True, timeout=120, check=False)  # fmt: skip
        shutil.rmtree(state, ignore_errors=True)


def srun(slurm: LocalSlurm, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["srun", *args], env=slurm.env, capture_output=True, text=True, timeout=timeout)


def test_srun_cluster_measure_writes_a_complete_cluster_run(slurm: LocalSlurm, tmp_path: Path) -> None:
    from jitterscope.rundir import load_run

    out = tmp_path / "slurm-run"
    proc = srun(slurm, "-n", "2", JITTERSCOPE, "cluster", "measure", "--duration", "2s", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr + slurm.log_tail("slurmd")
    summary = json.loads(proc.stdout)  # only rank 0 prints, and only JSON
    run = load_run(out, kinds=("cluster",))  # meta, summary and every node's tables, checked
    assert sorted(n["rank"] for n in run.meta["nodes"]) == [0, 1]
    assert summary["run"]["ranks"] == 2 and summary["run"]["nodes"] == 2
    # one machine, two ranks: local rank r measures CPU (r+1) mod 2, so the nodes are (host, 1) and (host, 0)
    assert sorted(n["cpu"] for n in summary["nodes"]) == [0, 1]
    assert len({n["host"] for n in summary["nodes"]}) == 1
    for n in summary["nodes"]:
        node = out / "nodes" / f"host={n['host']}" / f"cpu={n['cpu']}"
        assert json.loads((node / "summary.json").read_text())["cpus"][str(n["cpu"])]["detours"] == n["detours"]
        assert 2 * (1 - 5e-4) <= n["duration_s"] < 3, (n, proc.stderr)  # the whole 2 s (NTP slews by <= 500 ppm)


def test_srun_without_pmi_is_refused_in_one_line(slurm: LocalSlurm, tmp_path: Path) -> None:
    out = tmp_path / "never"
    proc = srun(
        slurm, "--mpi=none", "-n", "2", JITTERSCOPE, "cluster", "measure", "--duration", "2s", "--out", str(out)
    )
    assert proc.returncode != 0
    ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("jitterscope:")]
    assert len(ours) == 1 and "srun --mpi=pmi2" in ours[0], proc.stderr
    assert not out.exists() and proc.stdout == ""


def documented_script(marker: str) -> str:
    """The bash block of docs/commands/cluster.md that follows `marker`."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "commands" / "cluster.md").read_text()
    return doc.split(marker, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]


@needs_tracing
def test_documented_prolog_drains_a_noisy_node_and_requeues_the_job(tmp_path: Path) -> None:
    """The prolog of docs/commands/cluster.md, as printed there but for where jitterscope and the baseline
    are, run by a real slurmd: a daemon injected after the baseline makes the check fail, so the node is
    drained with the check's line as the reason and the job goes back to the queue."""
    if missing_programs():
        pytest.skip("not installed: " + ", ".join(missing_programs()) + " (make packages)")
    cpu = probed_cpu()
    base = tmp_path / "baseline"
    jitterscope("measure", "--cpus", str(cpu), "--duration", "1s", "--priority", "fifo:10", "--no-report",
                "--out", str(base), check=True)  # fmt: skip
    script = documented_script("**Prolog**")
    assert "JITTERSCOPE=/usr/local/bin/jitterscope\n" in script and "/var/lib/jitterscope/baseline" in script
    script = script.replace("/usr/local/bin/jitterscope", JITTERSCOPE).replace(
        "/var/lib/jitterscope/baseline", str(base)
    )
    prolog = tmp_path / "prolog.sh"
    prolog.write_text(script)
    prolog.chmod(0o755)
    tmp_path.chmod(0o755)
    inj = subprocess.Popen(
        [JITTERSCOPE, "inject", "--cpu", str(cpu), "--period", "10ms", "--busy", "2ms", "--duration", "60s",
         "--name", "js-prolog-inj"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        with local_slurm(cpus=2, extra=[f"Prolog={prolog}"]) as s:
            sub = subprocess.run(["sbatch", "-n", "1", "--wrap", "true", "-o", "/dev/null"], env=s.env,
                                 capture_output=True, text=True, timeout=30)  # fmt: skip
            assert sub.returncode == 0, sub.stderr
            deadline = time.monotonic() + 60
            state = ""
            while time.monotonic() < deadline and not state.startswith("drained"):
                time.sleep(1)
                state = subprocess.run(["sinfo", "-h", "-N", "-o", "%T %E"], env=s.env, capture_output=True,
                                       text=True, timeout=10).stdout.strip()  # fmt: skip
            queue = subprocess.run(["squeue", "-h", "-o", "%T %r"], env=s.env, capture_output=True, text=True,
                                   timeout=10).stdout  # fmt: skip
    except SlurmUnavailable as err:
        pytest.skip(f"Slurm could not start: {err}")
    finally:
        inj.terminate()
        inj.wait(timeout=10)
    assert state.startswith("drained jitterscope: JITTERSCOPE UNHEALTHY - "), state
    assert "js-prolog-inj" in state  # the reason names the injected daemon (new against the baseline)
    assert queue.startswith("PENDING") and "requeued" in queue, queue
