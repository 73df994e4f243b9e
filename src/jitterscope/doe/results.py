"""The records `doe` writes and reads, as typed dictionaries: analysis.json (`Analysis`, what
`analysis.analyze` returns and `render` draws), experiment.json (`ExperimentInfo`) and one line of
runs.jsonl (`RunRecord`).  They stay dictionaries because they are JSON records: mypy checks every
key a reader takes and every value a writer puts."""

from __future__ import annotations

from typing_extensions import TypedDict  # pydantic validates these (typing's own only on 3.12+)


class DesignInfo(TypedDict):
    """`Design.describe()`: the design as experiment.json and analysis.json state it."""

    kind: str
    k: int
    p: int
    treatments: int
    generators: list[str]
    defining_relation: str | None
    resolution: int | None
    aliases: dict[str, list[str]]


class _EffectBase(TypedDict):
    effect: str
    label: str
    q: float
    ss: float | None
    percent: float | None


class Effect(_EffectBase, total=False):
    """One sign-table column's effect; `ratio` in the multiplicative model, the rest with replications."""

    ratio: float
    ci: list[float]
    significant: bool
    p: float


class Allocation(TypedDict):
    """Jain's allocation of variation over the effects, with the error's share when replicated."""

    model: str
    treatments: int
    replications: int
    confidence: float
    q0: float
    effects: list[Effect]
    mean: Effect
    sst: float
    sse: float | None
    error_percent: float | None
    constant: bool
    dof_error: int | None
    s_e: float | None
    s_q: float | None
    t: float | None


class _KruskalBase(TypedDict):
    h: float
    df: int
    p: float


class KruskalWallis(_KruskalBase, total=False):
    note: str
    significant: bool


class DunnHolm(TypedDict):
    labels: list[str]
    p: list[list[float]]
    alpha: float
    significant_pairs: int


class _GroupShareBase(TypedDict):
    groups: list[list[int]]
    members: list[list[int]]
    share: list[list[float]]
    pairs: list[list[int]]


class GroupShare(_GroupShareBase, total=False):
    by: list[str]
    names: list[str]


class _FactorBase(TypedDict):
    letter: str
    name: str


class Factor(_FactorBase, total=False):
    """A factor as analysis.json names it; kind and levels once read from the experiment."""

    kind: str
    low: str
    high: str


class Outlier(TypedDict):
    run: int
    value: float


class Treatment(TypedDict):
    label: str
    levels: dict[str, int]
    values: list[float]
    runs: list[int]
    mean: float
    median: float
    sd: float | None
    outliers: list[Outlier]


class ExperimentHeader(TypedDict):
    name: str
    host: str
    kernel: str
    response: str
    created: str
    seed: int
    runs: int


class _AnalysisBase(TypedDict):
    design: DesignInfo
    factors: list[Factor]
    unit: str
    treatments: list[Treatment]
    allocation: Allocation
    kruskal_wallis: KruskalWallis
    dunn_holm: DunnHolm | None
    group_comparisons: GroupShare | None


class Analysis(_AnalysisBase, total=False):
    """Everything `doe analyze` reports (analysis.json)."""

    allocation_log: Allocation
    experiment: ExperimentHeader


class ResponseInfo(TypedDict):
    describe: str
    unit: str
    cpus: list[int]


class FactorInfo(TypedDict):
    letter: str
    name: str
    kind: str
    low: str
    high: str


class TreatmentInfo(TypedDict):
    index: int
    label: str
    levels: dict[str, int]


class _RunRecordBase(TypedDict):
    run: int
    treatment: int
    label: str
    rep: int
    y: float
    levels: dict[str, str]
    start: str
    seconds: float


class ResponseExtra(TypedDict, total=False):
    """What a response adds to its run's record: the measure run it wrote, or the command's wall time."""

    run_dir: str
    wall_s: float


class RunRecord(_RunRecordBase, ResponseExtra):
    """One finished run: a line of runs.jsonl."""


class ExperimentInfo(TypedDict):
    """experiment.json: the plan as it was run."""

    format: str
    format_version: int
    name: str
    plan_sha256_16: str
    host: str
    kernel: str
    created: str
    response: ResponseInfo
    factors: list[FactorInfo]
    design: DesignInfo
    replications: int
    seed: int
    confidence: float
    log: bool
    groups_by: list[str] | None
    treatments: list[TreatmentInfo]
    run_order: list[list[int]]
