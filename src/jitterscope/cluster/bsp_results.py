"""What `cluster bsp` hands between its steps: each rank's phase timings (pickled to rank 0), the
analysis of all of them, and the predictions it sets against the measured runtime."""

from __future__ import annotations

import numpy as np
from typing_extensions import TypedDict  # pydantic reads the summary back (report/cluster.py)

from jitterscope.simulate.results import DelayJson


class RankTimings(TypedDict):
    """One rank's run, ns since the run's first synchronization (arrays: one entry per phase or gap)."""

    rank: int
    host: str
    cpu: int
    real_host: str
    tsc_hz: float
    iterations: int
    cycles_per_iter: float
    sync_ns: float
    dropped: int
    compute_start_ns: np.ndarray
    compute_end_ns: np.ndarray
    gaps: np.ndarray
    gap_ns: np.ndarray
    sync_end_ns: np.ndarray
    gap_start_ns: np.ndarray
    gap_len_ns: np.ndarray
    sync_gaps: int
    sync_threshold_ns: float
    kernel: str
    start_unix_ns: int


class NodeFit(TypedDict):
    model: str
    noise: DelayJson | None
    verdict: str


class PredictionDetail(TypedDict, total=False):
    """How a prediction was made: the trace engine's replications and placement, or the fits."""

    replications: int
    seed: int
    placement: str
    offsets: str  # "own" placement: how the nodes' random offsets were drawn
    assignment: str
    expected_max_delay_ns: float
    fits: list[NodeFit]


class PredictionJson(PredictionDetail, total=False):
    """A prediction against the measured run, or why there is none (`error`)."""

    runtime_s: float
    ideal_s: float
    slowdown: float
    ci95_s: float | None
    sd_s: float | None
    slowdown_error: float
    runtime_rel_error: float
    error: str


class Measured(TypedDict):
    runtime_s: float
    ideal_s: float
    slowdown: float
    phase_mean_ns: float
    phase_p99_ns: float
    phase_max_ns: float
    work_target_ns: float
    work_ns: float
    work_spread: float
    work_sd_ns: float


class BspNode(TypedDict):
    node: str
    host: str
    cpu: int
    rank: int
    compute_mean_ns: float
    work_ns: float
    compute_max_ns: float
    noise_mean_ns: float
    noise_ppm: float
    gaps: int
    gaps_dropped: int
    slowest_share: float
    sync_ns: float


class Analysis(TypedDict):
    measured: Measured
    predictions: dict[str, PredictionJson]
    nodes: list[BspNode]
    work_ns: float
    sync_ns: float


class BspRunHeader(TypedDict):
    id: str
    kind: str
    mode: str
    nodes: int
    phases: int
    phase_ns: float
    work_ns: float
    sync: str
    sync_ns: float
    threshold_ns: float


class BspSummary(TypedDict):
    """summary.json of a `cluster bsp` run."""

    run: BspRunHeader
    measured: Measured
    predictions: dict[str, PredictionJson]
    nodes: list[BspNode]
