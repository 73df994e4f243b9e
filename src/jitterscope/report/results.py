"""What a measure run's report page shows (report/data.py computes it, figures.py and run.py draw it),
as typed records over summary.json's own (measure/summary.py)."""

from __future__ import annotations

from typing import TypedDict

from jitterscope.measure.summary import ChainRow, SourceRow


class Histogram(TypedDict):
    edges_ns: list[float]
    counts: list[int]


class CpuHistogram(Histogram):
    cpu: int


class TopSource(TypedDict):
    kind: str
    name: str
    share: float  # of this CPU's attributed time


class CpuRow(TypedDict, total=False):
    """summary.json's row of one CPU (absent when it had none), with its top explained source."""

    noise_ns: int
    noise_ppm: float
    detours: int
    p99_ns: float
    max_ns: int
    resolution_ns: float
    cpu: int
    top_source: TopSource | None
    unexplained_share: float


class Timeline(TypedDict):
    cpu: int
    bin_s: float
    bins: int
    ppm_by_kind: dict[str, list[float]]  # source kind -> noise (ppm) per bin


class SourceDistribution(Histogram):
    kind: str
    name: str
    label: str
    n: int
    median_ns: float


class Chain(ChainRow):
    label: str
    share: float


class Unexplained(TypedDict, total=False):
    count: int
    total_ns: int
    share: float
    likely: str
    whole_detours: int  # detours with nothing traced at all
    per_cpu_ns: dict[str, int]
    median_ns: float
    hist: Histogram | None


class TracingInfo(TypedDict):
    enabled: bool
    reason: str | None
    events: list[str] | None
    clock: str | None


class Header(TypedDict):
    id: str | None
    host: str | None
    kernel: str | None
    command_line: str
    start: str | None
    duration_s: float
    cpus: list[int]
    threshold_ns: float | None
    cpu_model: str | None
    clocksource: str | None
    virtualization: str | None
    tool_version: str | None
    tracing: TracingInfo
    lost_events: int
    lost_by_cpu: dict[str, int]
    interrupted: bool
    warnings: list[str]


class ReportData(TypedDict):
    """Everything a measure run's page shows."""

    header: Header
    cpus: list[CpuRow]
    total_noise_ns: int
    histograms: list[CpuHistogram]
    timeline: list[Timeline]
    sources: list[SourceRow]
    source_distributions: list[SourceDistribution]
    chains: list[Chain]
    unexplained: Unexplained
    headline: str
