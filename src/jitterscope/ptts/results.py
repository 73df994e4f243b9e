"""What `ptts --json` prints, as typed dictionaries: `ReportData` (one analysis), `SweepData` (a sweep
of one component's offset or period) and `TreeData` (one latency tree).  Times are in the model's
unit; probabilities are fractions.  mypy checks every key the analysis writes and the renderer reads."""

from __future__ import annotations

from typing import TypedDict


class Distances(TypedDict):
    """Kolmogorov distance and total variation between two latency distributions."""

    kolmogorov: float
    total_variation: float


class _LatencyBase(TypedDict):
    mean: float
    min: float
    max: float
    p50: float
    p90: float
    p99: float
    p999: float


class LatencyData(_LatencyBase, total=False):
    pmf: list[list[float]]  # [time, probability] pairs


class _SimulationBase(TypedDict):
    iterations: int
    seconds: float
    seed: int | None
    loss_any_overwrite: float
    dkw95: float


class SimulationBlock(_SimulationBase, total=False):
    """A simulated analysis; compared with the exact one when that was affordable (else `note`)."""

    kolmogorov: float
    total_variation: float
    exact_seconds: float
    exact_loss_probability: float | None
    exact_latency: LatencyData
    note: str


class _ErrorBase(TypedDict):
    against: str  # "exact" or "simulation"
    kolmogorov: float
    total_variation: float


class ApproximationError(_ErrorBase, total=False):
    """The adapted periods' result against the original's (exact, or simulated when over budget)."""

    loss_original: float | None
    iterations: int
    dkw95: float
    loss_original_simulated: float
    mean_shift: float


# "from" is a keyword: these two are spelled in TypedDict's functional form
PeriodChange = TypedDict(
    "PeriodChange", {"component": str, "from": float, "to": float, "change": float, "relative": float}
)
PhaseStep = TypedDict("PhaseStep", {"components": list[str], "from": float, "to": float})


class _ApproximationBase(TypedDict):
    grid: float
    periods: list[PeriodChange]
    phase_steps: list[PhaseStep]
    hyperperiod_from: float
    trees_from: int
    predicted_seconds_from: float


class Approximation(_ApproximationBase, total=False):
    error: ApproximationError


class _ReportBase(TypedDict):
    model: str
    unit: str
    method: str
    hyperperiod: float
    trees: int
    predicted_work: int
    latency: LatencyData
    loss_probability: float | None
    seconds: float


class ReportData(_ReportBase, total=False):
    simulation: SimulationBlock
    deadline: float
    deadline_miss: float | None
    loss_by_component: dict[str, float]
    approximation: Approximation


class _SweepPointBase(TypedDict):
    hyperperiod: float
    trees: int
    latency: LatencyData
    loss_probability: float | None


class SweepPoint(_SweepPointBase, total=False):
    offset: float  # the swept field: one of offset and period
    period: float
    deadline_miss: float


class SweepSpec(TypedDict):
    component: str
    field: str
    points: list[SweepPoint]


class _SweepBase(TypedDict):
    model: str
    unit: str
    method: str
    sweep: SweepSpec
    seconds: float


class SweepData(_SweepBase, total=False):
    deadline: float


class Branch(TypedDict):
    p: float
    node: TreeNodeData


class TreeNodeData(TypedDict):
    component: str
    time: float
    children: list[Branch]


class TreeData(TypedDict):
    tree: int
    root: TreeNodeData
    flattened: list[list[float]]
