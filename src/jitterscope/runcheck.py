"""meta.json and summary.json checked at load, through the configuration layer (config.py).

Each run kind (rundir.KINDS) names its summary model here (and may name a meta
model derived from `Meta`); a new kind adds its model to this file.

A run written by hand, by an older tool or half-overwritten must be refused in
one line naming the file and the key ("summary.json: cpus.1.noise_ppm must be
a number, got 'high'"), never read into a wrong answer or a traceback later.
Keys beyond these are allowed (the format grows by adding keys); the types of the
documented ones (docs/run-format.md) and the kinds are checked. Per-CPU and
per-source numbers may be absent (read as 0), as in the synthetic runs tests write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
)

from jitterscope.config import validate
from jitterscope.tracing.records import KINDS

# Kinds a summary source may have: the trace's kinds and the unexplained remainder.
SOURCE_KINDS = frozenset(KINDS) | {"unexplained"}

# Lax int: a count written as 142660465.0 by an older writer still reads; "high" or 1.5 do not.
Count = Annotated[int, Field(ge=0)]
Number = Annotated[float, Field(allow_inf_nan=False)]


def _source_kind(k: str) -> str:
    if k not in SOURCE_KINDS:
        raise ValueError(f"must be one of {', '.join(sorted(SOURCE_KINDS))}, got {k!r}")
    return k


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Meta(_Open):
    format: StrictStr
    format_version: StrictInt
    kind: StrictStr = "measure"  # one of rundir.KINDS (checked there)
    id: StrictStr | None = None
    host: StrictStr | None = None
    kernel: StrictStr | None = None
    command_line: list[StrictStr] | None = None
    start: StrictStr | None = None
    start_unix_ns: StrictInt | None = None
    duration_s: Annotated[Number, Field(ge=0)]
    interrupted: StrictBool = False
    cpus: list[Count] = []
    options: dict[str, Any] = {}
    tsc_hz: Number | None = None
    t0_tsc: StrictInt | None = None
    tracing: dict[str, Any] = {}
    lost_events: Count = 0
    probe: dict[str, Any] = {}


class CpuSummary(_Open):
    noise_ns: Count = 0
    noise_ppm: Annotated[Number, Field(ge=0)] = 0.0
    detours: Count = 0
    p99_ns: Number = 0.0
    max_ns: Count = 0
    resolution_ns: Number = 0.0


class Source(_Open):
    kind: Annotated[StrictStr, AfterValidator(_source_kind)]
    name: StrictStr
    count: Count = 0
    total_ns: Count = 0
    share: Number = 0.0
    cpus: list[Count] = []
    # added: absent in runs written before events were counted (read as not counted)
    detours_per_s: Annotated[Number, Field(ge=0)] | None = None
    events: Count | None = None
    events_per_s: Annotated[Number, Field(ge=0)] | None = None


class QuietSource(_Open):
    kind: Annotated[StrictStr, AfterValidator(_source_kind)]
    name: StrictStr
    events: Count = 0
    events_per_s: Annotated[Number, Field(ge=0)] = 0.0
    cpus: list[Count] = []


class Unexplained(_Open):
    count: Count = 0
    total_ns: Count = 0
    share: Number = 0.0


class Chain(_Open):
    sources: list[StrictStr]
    count: Count
    total_ns: Count


class MeasureSummary(_Open):
    run: dict[str, Any]
    cpus: dict[str, CpuSummary]
    sources: list[Source]
    quiet_sources: list[QuietSource] = []
    chains: list[Chain] = []
    unexplained: Unexplained = Unexplained()
    lost_events: Count = 0


class ClusterSummary(_Open):
    run: dict[str, Any]
    nodes: list[dict[str, Any]]


class SyncTypeSummary(_Open):
    count: Count = 0
    jitter_ns: Count = 0
    share: Number = 0.0


class SyncSummary(_Open):
    """`jitterscope sync` (docs/run-format.md, "sync runs")."""

    run: dict[str, Any]
    run_ns: Count = 0
    sync_jitter_ns: Count = 0
    types: dict[str, SyncTypeSummary] = {}
    objects: list[dict[str, Any]] = []
    critical_path: dict[str, Any] = {}
    frames: dict[str, Any] = {}
    dropped: Count = 0
    lost_events: Count = 0


class PipelineLatency(_Open):
    n: Count = 0
    mean: Number | None = None
    sd: Number | None = None
    min: Number | None = None
    p50: Number | None = None
    p99: Number | None = None
    p999: Number | None = None
    max: Number | None = None


class PipelineSummary(_Open):
    """`jitterscope pipeline run` (docs/run-format.md, "pipeline runs")."""

    run: dict[str, Any]
    latency: PipelineLatency
    subboxes: list[dict[str, Any]] = []
    outputs: dict[str, Any] = {}
    guard: dict[str, Any] = {}
    late: dict[str, Any] | None = None
    lost_events: Count = 0


class TuneSummary(_Open):
    """`jitterscope tune verify` (docs/run-format.md, "tune verify directories")."""

    ok: StrictBool
    alpha: Number
    targets: list[dict[str, Any]]
    overall: dict[str, Any]
    before: StrictStr
    after: StrictStr


class PlaceSummary(_Open):
    """`jitterscope place` (docs/run-format.md, "place runs")."""

    run: dict[str, Any]
    tasks: list[dict[str, Any]]
    weight_sources: dict[str, Count] = {}
    coheavy_fraction: Number
    coheavy_method: StrictStr
    balanced_fraction: Number | None = None
    credit: dict[str, Any] = {}
    decisions: dict[str, Count] = {}
    observer: dict[str, Any] = {}


class PlaceCompareSummary(_Open):
    """`jitterscope place --compare` (docs/run-format.md, "place compare directories")."""

    baseline: StrictStr
    sets: list[StrictStr]
    repeat: Count
    ended_by: StrictStr
    runs: list[StrictStr]
    tasks: list[dict[str, Any]]
    policies: dict[str, dict[str, Any]]


class ProtectSummary(_Open):
    """`jitterscope protect` (docs/run-format.md, "protect runs")."""

    run: dict[str, Any]
    signal: StrictStr
    actuator: StrictStr
    law: StrictStr
    sample_ns: Number
    suspend_ns: Number
    sampling: StrictStr = "timer"
    event_budget: dict[str, Any] | None = None
    phases: dict[str, dict[str, Any]]
    progress_ratio: Number | None = None
    delivery: dict[str, Any] | None = None
    critical: dict[str, Any] | None = None
    critical_latency: StrictStr | None = None
    cpus: dict[str, dict[str, Any]] = {}
    controller: dict[str, Any] = {}


M = TypeVar("M", bound=BaseModel)


def check_meta(meta: Any, path: Path, model: type[M] = Meta) -> M:  # type: ignore[assignment]
    """meta.json's documented fields have their documented types (one line naming file and key otherwise)."""
    return validate(meta, model, str(path))


def check_summary(summary: Any, model: type[BaseModel], path: Path) -> None:
    """summary.json against its kind's model (rundir.KINDS[kind].summary)."""
    validate(summary, model, str(path))
