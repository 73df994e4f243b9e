"""srun without a PMI plugin starts every task as an MPI job of its own: cluster commands refuse that."""

from __future__ import annotations

from jitterscope.cluster.mpi import unwired_launch


def test_srun_tasks_that_mpi_sees_alone_are_refused_naming_the_fix() -> None:
    why = unwired_launch(1, {"SLURM_STEP_NUM_TASKS": "4", "SLURM_PROCID": "2"})
    assert why is not None and "srun started 4 tasks" in why and "srun --mpi=pmi2" in why


def test_connected_or_single_launches_pass() -> None:
    assert unwired_launch(4, {"SLURM_STEP_NUM_TASKS": "4"}) is None  # srun --mpi=pmi2: MPI sees them all
    assert unwired_launch(1, {"SLURM_STEP_NUM_TASKS": "1"}) is None  # srun -n 1
    assert unwired_launch(1, {}) is None  # started by hand: a one-rank job, as documented
    # mpiexec inside an allocation: its PMI server connected this process, whatever the step's task count
    assert unwired_launch(1, {"SLURM_STEP_NUM_TASKS": "2", "PMI_RANK": "0", "PMI_FD": "5"}) is None
    assert unwired_launch(1, {"SLURM_STEP_NUM_TASKS": "x"}) is None
