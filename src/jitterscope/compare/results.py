"""What comparing two measure runs returns (`compare --json` prints it; check and tune verify read it):
per source its two sides and tests, per CPU its total noise and block test (diff.py), and the runs and
basis they were compared on (compare_loaded)."""

from __future__ import annotations

from typing import TypedDict


class Side(TypedDict):
    """One run's detours of a source, on the compared CPUs."""

    count: int
    rate_hz: float
    total_ns: int
    ppm: float
    median_ns: float
    p99_ns: float


class RateTest(TypedDict):
    ratio: float | None
    ci95: list[float | None]
    p: float
    q: float | None  # Benjamini-Hochberg, over the comparison's every test
    dispersion: float


class DurationTest(TypedDict):
    median_ratio: float | None
    cliffs_delta: float
    p: float
    q: float | None


class EventRates(TypedDict):
    """The source's own event rate (compare/events.py), beside the detour rate compare tests."""

    base_per_s: float
    new_per_s: float
    ratio: float | None


class _SourceBase(TypedDict):
    kind: str
    name: str
    names: list[str]
    base: Side
    new: Side
    rate: RateTest
    duration: DurationTest | None
    delta_ppm: float
    ppm_ratio: float | None
    significant: bool
    tested: bool
    regression: bool


class SourceRow(_SourceBase, total=False):
    direction: str  # a changed source: worse or better
    events: EventRates | None  # None: not counted by both runs


class Total(TypedDict):
    """One CPU's total noise, before and after."""

    base_ppm: float
    new_ppm: float
    delta_ppm: float
    ratio: float | None
    base_detours: int
    new_detours: int
    p: float
    q: float | None
    significant: bool
    tested: bool
    regression: bool


class ThresholdsJson(TypedDict):
    alpha: float
    min_ppm: float
    min_ratio: float


class Diff(TypedDict):
    new: list[SourceRow]
    gone: list[SourceRow]
    changed: list[SourceRow]
    unchanged: list[SourceRow]
    total: dict[str, Total]  # by CPU
    tests: int
    regression: bool
    regressions: list[str]
    thresholds: ThresholdsJson


class RunInfo(TypedDict):
    id: str | None
    path: str
    host: str | None
    kernel: str | None
    cpus: list[int]
    duration_s: float | None
    tracing: bool
    lost_events: int


class BasisJson(TypedDict):
    threshold_ns: float
    block_ns: float
    sources: bool
    untested_kinds: list[str]
    totals_tested: bool


class Comparison(Diff):
    """`compare_loaded`: the diff, with the runs, the CPUs and the basis it was made on."""

    runs: dict[str, RunInfo]  # base, new
    compared_cpus: list[int]
    basis: BasisJson
    not_compared: list[str]
    notes: list[str]
