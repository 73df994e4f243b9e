"""A place run's records as they cross the engine, the builder, the comparison and the renderers: the
observations and decisions tables' rows, summary.json (docs/run-format.md, "place runs") and a
comparison's results rows and summary ("place compare directories")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import TypedDict  # pydantic validates the summaries (runcheck.read_record)

from jitterscope.runcheck import read_record

if TYPE_CHECKING:
    from jitterscope.rundir import Run


class Observation(TypedDict):
    """One task's quantum (schema.OBSERVATIONS): counter deltas, its weight and where that came from."""

    pid: int
    name: str
    start_ns: int
    end_ns: int
    cpu: int
    last_cpu: int
    run_ns: int
    wait_ns: int
    slices: int
    vcsw: int
    ivcsw: int
    minflt: int
    majflt: int
    ops: int
    specials: int
    faults: int
    avx512_ms: int
    cycles: int
    llc_misses: int
    instructions: int
    llc_refs: int
    weight: float
    source: str


class Decision(TypedDict):
    """One policy decision (schema.DECISIONS)."""

    t_ns: int
    policy: str
    pid: int
    name: str
    action: str
    cpu: int
    value: float
    reason: str


class Latency(TypedDict):
    p50: float
    p99: float
    max: float
    mean: float


class _Counted(TypedDict):
    """What a task's summary and its state in the raw stream share."""

    pid: int
    name: str
    command: list[str]
    home: int
    declared: float | None
    run_ns: int
    wait_ns: int
    ivcsw: int
    ops: int
    specials: int
    faults: int
    faulting_quanta: int
    banned: bool
    credit_ns: float
    end: str


class _TaskBase(_Counted):
    weight_source: str
    mean_weight: float
    ops_per_s: float
    quanta: int


class Task(_TaskBase, total=False):
    """A task of the run; its window, heartbeats and protection are absent from older runs' summaries."""

    window_ns: int
    protected: bool
    beats: int
    beats_lost: int
    latency_ns: Latency | None  # None: the task publishes no heartbeats


class TaskState(_Counted):
    """What the engine holds of a task (the raw stream's `t` records, raw.py): its counters cover
    window_ns, its first to last observation; specials and faults count since its start."""

    weight: float  # its weight now (a task never observed: its weight on arrival)
    window_ns: int
    protected: bool
    heartbeats: bool  # it may publish heartbeats (report API): a command place started


class TaskEnd(TaskState):
    """A task's state as the run ends, with its heartbeats (known only then: the raw stream's `end`)."""

    beats: int
    beats_lost: int
    latency_ns: Latency | None


class TopologyInfo(TypedDict):
    llc_groups: list[list[int]]
    little: list[int]
    smt: list[list[int]]
    capacity: dict[str, int]
    source: str
    note: str


class Pmu(TypedDict):
    available: bool
    why: str


class Settings(TypedDict):
    bins: int
    period_ns: float
    credit: float
    credit_norm: str
    obs_f: str
    release_after: int
    ban_after: int
    heavy: float


class RunFacts(TypedDict):
    """What the run header says before the run ends (the raw stream's first record, raw.py)."""

    policies: list[str]
    quantum_ns: float
    dry_run: bool
    actuator: str | None
    cpus: list[int]
    topology: TopologyInfo
    pmu: Pmu
    settings: Settings


class RunHeader(RunFacts):
    wall_ns: int
    ended_by: str


class Credit(TypedDict):
    count: int
    moved_ns: float


class Observer(TypedDict):
    snapshots: int
    mean_ns: float
    p99_ns: float


class Summary(TypedDict):
    run: RunHeader
    weight_sources: dict[str, int]
    tasks: list[Task]
    coheavy_fraction: float
    coheavy_method: str  # exact (jitterscope decided who ran when) or estimated
    balanced_fraction: float | None
    credit: Credit
    decisions: dict[str, int]
    observer: Observer


def read_summary(run: Run) -> Summary:
    """A place run's summary.json as a `Summary` (keys not named above are left out)."""
    return read_record(run.summary, Summary, run.path / "summary.json")


class Result(TypedDict):
    """One row of a comparison's results table (schema.RESULTS): a task in one run of a policy set."""

    repetition: int
    policies: str
    run: str
    task: int
    name: str
    pid: int
    protected: bool
    wall_ns: int
    ops: int
    run_ns: int
    wait_ns: int
    ivcsw: int
    ops_per_s: float
    ops_per_cpu_s: float
    wait_per_cpu_s: float | None
    preempt_per_cpu_s: float | None
    latency_p99_ns: float | None
    alive: bool
    coheavy_fraction: float


class Noise(TypedDict):
    wait_per_cpu_s: float | None
    preempt_per_cpu_s: float | None
    latency_p99_ns: float | None


class Metrics(Noise):
    """A task's means over the repetitions of one policy set."""

    ops_per_s: float | None
    ops_per_cpu_s: float | None
    repetitions: int
    died: int


class TaskCompared(TypedDict):
    task: int
    name: str
    protected: bool
    by_policy: dict[str, Metrics]


class Spread(TypedDict):
    """Speedups over the tasks: geometric mean, worst and best task."""

    gmean: float
    min: float
    max: float
    tasks: int


class PolicySet(TypedDict):
    speedup_wall: Spread | None
    speedup_cpu: Spread | None
    noise: Noise
    coheavy_fraction: float | None
    noise_ratio: Noise


class CompareSummary(TypedDict):
    baseline: str
    sets: list[str]
    repeat: int
    duration_ns: float | None
    ended_by: str
    runs: list[str]
    noise_of: str  # protected, or all (no task was --protect'ed)
    tasks: list[TaskCompared]
    policies: dict[str, PolicySet]


def read_compare_summary(run: Run) -> CompareSummary:
    return read_record(run.summary, CompareSummary, run.path / "summary.json")
