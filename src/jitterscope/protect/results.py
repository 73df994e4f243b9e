"""summary.json of a protect run as Python builds and reads it (protect/build.py writes it,
protect/render.py and calibrate read it): typed records, so mypy checks every key.  The kind's
schema (protect/kind.py) validates the same file when a run is loaded."""

from __future__ import annotations

from typing_extensions import TypedDict  # pydantic validates the controller's end line (controller.py)


class Dist(TypedDict):
    """A sample's mean, p50, p99 and max (ns)."""

    mean: float
    p50: float
    p99: float
    max: float


class Latency(TypedDict):
    """The critical program's latency (ns) over its heartbeats."""

    count: int
    mean_ns: float
    sd_ns: float
    p50_ns: float
    p99_ns: float
    max_ns: float
    deadline_misses: int | None


class BestEffort(TypedDict):
    """What the best-effort programs got in one phase."""

    progress_bytes_per_s: float | None
    cpu_share: float | None
    duty: float | None
    samples: int
    over: int


class Phase(TypedDict):
    seconds: float
    critical: Latency | None
    best_effort: BestEffort


class CpuRow(TypedDict):
    """One best-effort CPU: its samples, suspensions and the controller's cost there."""

    samples: int
    over: int
    duty: float | None
    suspensions: int
    clipped: int
    unconfirmed: int
    dropped: int
    sampling_ns: Dist | None
    suspension_ns: Dist | None
    stop_latency_ns: Dist | None
    issue_ns: Dist | None
    resume_ns: Dist | None
    controller_cpu_share: float | None
    spin_share: float


class _EventBudgetBase(TypedDict):
    unit: str


class EventBudget(_EventBudgetBase, total=False):
    """What each counter overflowed at with --sampling event: LLC lines (read, write) or CPU time."""

    read: int | None
    write: int | None
    cpu_ns: int


class Delivery(TypedDict):
    """What the law promised against what the programs got (with --compare)."""

    law_share: float | None
    persistent_excess: bool
    other_share: float | None
    shared: bool
    ratio_ci: list[float] | None
    ratio_ci_level: float
    cpu_ratio: float | None  # the programs' CPU time protected / unprotected: what the actuator controls
    cpu_ratio_ci: list[float] | None
    within_tolerance: bool | None
    tolerance: float
    suspension_excess_ns: float | None
    note: str | None


class RunInfo(TypedDict):
    id: str
    duration_s: float
    interrupted: bool
    complete: bool
    ended_by: str


class ControllerInfo(TypedDict):
    records: int
    dropped: int
    beats_lost: int
    writer_cpu_share: float


class Summary(TypedDict):
    """summary.json of a protect run (docs/run-format.md, "protect runs")."""

    run: RunInfo
    signal: str
    actuator: str
    law: str
    sampling: str
    event_budget: EventBudget | None
    sample_ns: float
    suspend_ns: float
    threshold: ThresholdInfo  # the options' threshold as the plan stated it
    expected_share: float | None
    phases: dict[str, Phase]  # "protected", and "unprotected" with --compare
    progress_ratio: float | None
    critical: Latency | None
    critical_latency: str
    cpus: dict[str, CpuRow]  # keyed by CPU number as text (JSON keys)
    controller: ControllerInfo
    delivery: Delivery | None


class _UnitEndBase(TypedDict):
    cpu: int


class UnitEnd(_UnitEndBase, total=False):
    """One control unit (CPU) in the controller's end line (native/protect.c, print_end)."""

    samples: int
    over: int
    suspensions: int
    clipped: int
    unconfirmed: int
    dropped: int
    spin_ns: int
    suspended_ns: int
    thread_cpu_ns: int
    task_counters: int


class ControllerEnd(TypedDict, total=False):
    """The controller's end line; empty when it never reported (killed, or never started)."""

    event: str
    records: int
    beats_lost: int
    interrupted: bool
    duration_ns: int
    units: list[UnitEnd]
    writer_cpu_ns: int
    sampling: str
    event_budget: list[int]  # what each counter overflowed at, --sampling event


class ProgramInfo(TypedDict):
    """A program the run started or was given (meta.json "programs")."""

    role: str  # critical or best-effort
    name: str
    pid: int
    argv: list[str]
    cpus: list[int]
    started: bool
    exit_code: int | None
    log: str | None


class ThresholdInfo(TypedDict, total=False):
    """The threshold as the controller was given it: its text, and what it came to for the signal."""

    text: str
    read_bps: float | None
    write_bps: float | None
    slack_ns: float
    deadline_ns: float
    ratio: float | None


class Options(TypedDict, total=False):
    """meta.json "options" of a protect run, as build.py reads them (runmeta.py writes them)."""

    signal: str
    actuator: str
    law: str
    sampling: str
    sample_ns: float
    suspend_ns: float
    compare_ns: float | None
    deadline_ns: float | None
    threshold: ThresholdInfo


class HostFacts(TypedDict):
    host: str
    kernel: str
    cpu_model: str
    clocksource: str
    virtualization: str | None
