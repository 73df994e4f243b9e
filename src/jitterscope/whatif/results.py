"""What `whatif dvfs` and `whatif cache` compute (--json prints it, render.py draws it), as typed
records: mypy checks every key the analyses write and the renderer reads."""

from __future__ import annotations

from typing import TypedDict


class DvfsRow(TypedDict):
    """The replay under the controller at one reactivity k."""

    k: int
    run_ns: float
    normalized: float  # of the ideal (no jitter) run time
    residual_ns: float
    removed: float | None  # share of the recorded slowdown the controller removed
    power: float
    energy: float | None
    transitions: int
    subframes: int
    saturated: float
    below_nominal: float
    factors: dict[str, int]  # frequency factor -> subframes at it
    approximated: bool


class TraceRow(TypedDict):
    """One subframe of one thread at one k (--trace-out, --plot)."""

    k: int
    tid: int
    subframe: int
    start_ns: float
    factor: float
    busy_ns: float
    jitter_count_ns: float


class DvfsOptionsInfo(TypedDict):
    subframe_ns: int
    warmup: int
    table: list[float]
    transition_ns: float
    model: str
    alpha: float
    quantize: str
    reactivity: list[int]
    evict_ns_per_burst: float


class _ApplyBase(TypedDict):
    status: str  # "applied", or "skipped: why"
    stand_in: bool


class DvfsApply(_ApplyBase, total=False):
    """--apply: the command pinned at nominal, then under the online controller."""

    root: str
    note: str | None
    period_ns: float
    frequencies_khz: dict[str, dict[str, int]]
    nominal_s: float
    controlled_s: float
    limit_changes: int
    power: dict[int, float]
    cwd: str


class _DvfsBase(TypedDict):
    threads: int
    recorded_ns: float
    ideal_ns: float
    replayed_ns: float
    recorded_normalized: float
    lost_ns: float
    wake_jitter_ns: float
    non_sync_seen: bool
    polled_waits: int
    missed_switches: int
    recorded_energy: float | None
    best_k: int | None
    by_k: list[DvfsRow]
    options: DvfsOptionsInfo


class DvfsResult(_DvfsBase, total=False):
    """`whatif dvfs`'s result."""

    apply: DvfsApply


class CacheView(TypedDict):
    """One machine with the kernel's bursts: misses it caused, against the ideal."""

    app_misses: int
    extra_misses: int
    vs_ideal: int
    slowdown: float
    os_slowdown: float
    other_hits: int
    app_evicted_by_os: int
    os_misses: int
    writebacks: int
    overflows: int
    overflow_rejected: int
    prefetched: int
    prefetch_useful: int
    counters: dict[str, int]  # the simulator's counters by name


class IdealView(TypedDict):
    app_misses: int
    run_ns: float
    counters: dict[str, int]


class RemedyAlone(TypedDict):
    app_misses: int
    counters: dict[str, int]


class SourceImpact(TypedDict):
    source: str
    bursts: int
    kernel_accesses: int
    unified: CacheView
    remedy: CacheView


class _CacheBase(TypedDict):
    accesses: int
    app_time_ns: float
    bursts: int
    kernel_accesses: int
    sources: int
    os_origin: str
    ideal: IdealView
    remedy_alone: RemedyAlone
    unified: CacheView
    remedy: CacheView
    per_source: list[SourceImpact]


class CacheResult(_CacheBase, total=False):
    """`whatif cache`'s result."""

    remedy_text: str
