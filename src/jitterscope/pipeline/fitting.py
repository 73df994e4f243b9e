"""`jitterscope fit` of a pipeline run: distributions of how much later than its fastest an iteration ended.

An iteration's delay is its latency minus the run's smallest latency (the
work itself, with the least interference seen); those delays are fitted and
ranked by the same code and tests as a measure run's per-phase delays
(simulate/fitting.py), the "phase" being that fastest iteration.  So the
jitter of a pipeline can feed `simulate --noise` like a measured run's noise.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from jitterscope.rundir import load_run
from jitterscope.simulate.fitting import Fit, fit_delays


def fit_pipeline(
    path: str | Path, replicates: int = 200, seed: int = 0, progress: Callable[[float], None] | None = None
) -> Fit:
    run = load_run(path, kinds=("pipeline",), purpose="fit")
    lat = run.table("iterations").column("latency_ns").to_numpy().astype(np.float64)
    base = float(lat.min()) if len(lat) else 0.0
    return fit_delays(
        (lat - base) / 1e9,
        base / 1e9,
        replicates=replicates,
        seed=seed,
        source=str(path),
        cpus=list(run.cpus),
        progress=progress,
    )
