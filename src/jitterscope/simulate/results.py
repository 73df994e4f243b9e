"""What `simulate --json` prints, as typed records: each (nodes, phases) point's result, and with
--by-source each source's effect.  The model's description stays a free-form record: each kind of
noise (trace, periodic, i.i.d., fit, LogGOPSim) states its own parameters."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict  # pydantic validates some (cluster/bsp_results.py)


class _PointBase(TypedDict):
    nodes: int
    phases: int
    phase_s: float
    runtime_s: float  # mean over replications
    ideal_s: float
    slowdown: float
    ci95_s: list[float] | None


class Point(_PointBase, total=False):
    """One (nodes, phases) point; `expected_s` where the model's exact expectation is known."""

    expected_s: float
    expected_slowdown: float | None


class _SourceEffectBase(TypedDict):
    kind: str
    name: str
    noise_ns: float
    share: float  # of the run's noise
    slowdown: float  # without this source
    reduction: float  # of the slowdown, by removing it
    runtime_s: float
    by_phases: dict[str, float]


class SourceEffect(_SourceEffectBase, total=False):
    share_rank: int
    rank: int  # by reduction


class BySource(TypedDict):
    nodes: int
    phases: int
    baseline_slowdown: float
    baseline_runtime_s: float
    sources: list[SourceEffect]
    method: str


class _SimulationBase(TypedDict):
    model: dict[str, Any]  # the noise model's own parameters (see the module docstring)
    results: list[Point]


class SimulationData(_SimulationBase, total=False):
    by_source: BySource


class DelayJson(TypedDict):
    """A delay distribution as `simulate` and `fit` state it: its family and parameters (seconds)."""

    family: str
    params: dict[str, float]


class Statistic(TypedDict):
    statistic: float
    p_value: float


class FamilyJson(TypedDict):
    family: str
    params: dict[str, float]
    ks: Statistic
    ad: Statistic
    fits: bool
    rank: int


class TailFit(TypedDict):
    """A generalized Pareto tail over the delays' upper quantile (fitting._fit_tail)."""

    threshold_s: float
    quantile: float
    exceedances: int
    xi: float
    scale_s: float
    ks: Statistic
    ad: Statistic
    fits: bool


class DelaysJson(TypedDict):
    count: int
    zero_fraction: float
    mean_s: float
    sd_s: float
    p50_s: float
    p99_s: float
    max_s: float
    positive: int
    cpus: list[int] | list[str]


class GofJson(TypedDict):
    method: str
    replicates: int
    sample: int
    alpha: float
    subsample: bool
    tested_on: str
    fitted_to: str


class BestJson(TypedDict):
    family: str
    model: str
    fits: bool
    noise: DelayJson


class FitData(TypedDict):
    """What `fit --json` prints."""

    run: str
    phase_s: float
    delays: DelaysJson
    gof: GofJson
    families: list[FamilyJson]
    tail: TailFit | None
    best: BestJson
    verdict: str
