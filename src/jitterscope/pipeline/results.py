"""What a pipeline run's analysis and `pipeline bench` hand on, as typed records: summary.json's parts
(docs/run-format.md, "pipeline runs") and bench.json's rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from typing_extensions import TypedDict  # pydantic validates the summary's (runcheck.read_record)

from jitterscope.runcheck import read_record

if TYPE_CHECKING:
    from jitterscope.rundir import Run


class Latency(TypedDict):
    """Per-iteration latency, ns (stats.latency_stats); None without iterations."""

    n: int
    mean: float | None
    sd: float | None
    min: float | None
    p50: float | None
    p99: float | None
    p999: float | None
    max: float | None


class LateSource(TypedDict):
    kind: str
    name: str
    late_ns: float
    typical_ns: float
    excess_ns: float
    late_iterations_hit: int


class _LateBase(TypedDict):
    percentile: float
    count: int
    sources: list[LateSource]


class Late(_LateBase, total=False):
    """Late iterations against typical ones, per source (late.late_summary); the rest absent without any."""

    threshold_ns: float
    latency_excess_ns: float
    explained_ns: float
    explained_share: float


class SubBox(TypedDict):
    name: str
    thread: int
    mean_ns: float
    sd_ns: float
    max_ns: float
    start_mean_ns: float


class RunHeader(TypedDict):
    id: str
    host: str
    start: str
    graph: str
    heuristic: str
    memory: str
    threads: int
    cpus: list[int]
    iterations: int
    interrupted: bool


class Outputs(TypedDict):
    sinks: list[str]
    digest: str


class Guard(TypedDict):
    enabled: bool
    violations: int


class _SummaryBase(TypedDict):
    run: RunHeader
    latency: Latency
    subboxes: list[SubBox]
    outputs: Outputs
    guard: Guard


class Summary(_SummaryBase, total=False):
    """summary.json; `late` and `lost_events` when the run was traced."""

    late: Late
    lost_events: int


def read_summary(run: Run) -> Summary:
    """The run's summary.json as a `Summary` (keys not named above are left out)."""
    return read_record(run.summary, Summary, run.path / "summary.json")


class LateTop(TypedDict):
    kind: str
    name: str
    late_ns: float
    typical_ns: float


class BenchRow(TypedDict):
    """One configuration of `pipeline bench` (bench.json "rows"; `_lat` is left out of the file)."""

    graph: str
    heuristic: str
    memory: str
    threads: int
    pool_bytes: int
    signals: int
    run: str | list[str]  # its run directory; with --rounds, one per round
    latency: Latency
    digest: str
    _lat: np.ndarray
    late_top: LateTop | None


class SigmaOrder(TypedDict):
    sigma_by_heuristic_ns: dict[str, float]
    checks: dict[str, bool]
    holds: bool | None


class BenchResult(TypedDict):
    graph: str
    threads: int
    iterations: int
    cpus: list[int]
    rows: list[BenchRow]
    chains: list[BenchRow]
    outputs_identical: bool
    order_of_sigma: SigmaOrder
