"""What jitterscope sets in its own environment for itself, and the environment a user's program gets instead.

OpenBLAS (under numpy and scipy) starts a server thread per CPU at load, and each one spins before it sleeps: 0.3
CPU-seconds per process on this 2-vCPU VM (numpy's import: 0.40 s of CPU against 0.10 s with one thread), taken
from whatever else runs, a probed CPU included.  jitterscope's linear algebra is on small matrices, so importing
jitterscope sets OPENBLAS_NUM_THREADS=1 unless the user did, before numpy is loaded.  Its children (workers,
other jitterscope processes) inherit it; a program the user asks jitterscope to run (sync's CMD, protect's, whatif
and doe's) gets `program_environ()`: the user's environment, without what jitterscope set for itself."""

from __future__ import annotations

import os
from collections.abc import Mapping

BLAS_THREADS = "OPENBLAS_NUM_THREADS"
OWN = "JITTERSCOPE_OWN_ENV"  # the names jitterscope set (not the user), so that its child processes know them too


def _own() -> set[str]:
    return {n for n in os.environ.get(OWN, "").split(",") if n}


def limit_blas() -> None:
    """One OpenBLAS thread in this process and its children, unless the user chose a number."""
    if BLAS_THREADS not in os.environ:
        os.environ[BLAS_THREADS] = "1"
        os.environ[OWN] = ",".join(sorted(_own() | {BLAS_THREADS}))


def program_environ(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a program the user asked jitterscope to run: this process's, less what jitterscope set
    for itself, plus `extra`."""
    drop = _own() | {OWN}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **(extra or {})}
