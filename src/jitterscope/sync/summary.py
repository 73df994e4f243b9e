"""summary.json of a sync run as Python sees it (docs/run-format.md, "sync runs"): build.make_summary returns a
`Summary`; kind.SyncSummary validates the same file when a run is loaded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import TypedDict  # pydantic validates these (typing's own only on 3.12+)

from jitterscope.runcheck import read_record
from jitterscope.sync.subframes import Stats

if TYPE_CHECKING:
    from jitterscope.rundir import Run


class RunHeader(TypedDict):
    id: str
    host: str
    kernel: str
    start: str
    command: list[str]
    exit_code: int | None  # None: recovered by `analyze` after jitterscope was killed
    duration_s: float
    threshold_ns: int
    mode: str
    tracing: bool
    cpus: list[int]
    interrupted: bool


class Dist(TypedDict):
    count: int
    p50_ns: float
    p99_ns: float
    max_ns: float
    mean_ns: float


class CauseShare(TypedDict):
    side: str
    kind: str
    name: str
    ns: int
    share: float  # of the intervals' time


class TypeStats(TypedDict):
    intervals: int
    count: int
    jitter_ns: int
    share: float
    t: Dist
    jitter: Dist
    causes: list[CauseShare]


class TopObject(TypedDict):
    pid: int
    obj: str  # hex address
    kind: str
    symbol: str
    site: str
    count: int
    jitter_ns: int
    types: dict[str, int]
    causes: list[CauseShare]


class CriticalPath(TypedDict):
    counter_jitter_ns: int
    path_jitter_ns: int
    length_ns: int
    steps: int
    share: float
    threads: list[int]
    merge_at_barrier: bool
    per_thread: dict[str, int]


class Frames(TypedDict):
    count: int
    time: Dist
    jitter: Dist


class Lognormal(TypedDict):
    median_ns: float
    sigma: float
    fits: bool


class Tail(TypedDict):
    xi: float
    threshold_ns: float
    fits: bool


class _FitBase(TypedDict):
    fitted: bool


class Fit(_FitBase, total=False):
    """Fitted: best, verdict, lognormal, tail; not fitted: reason."""

    reason: str
    best: str
    verdict: str
    lognormal: Lognormal
    tail: Tail | None


class OverheadJson(TypedDict):
    startup_s: float
    program_s: float
    analysis_s: float
    report_s: float | None
    wall_s: float
    own_s: float
    own_share: float | None
    ratio: float | None


class _SummaryBase(TypedDict):
    run: RunHeader
    processes: int
    unseen: list[str]
    threads: int
    waits: int
    run_ns: int
    sync_jitter_ns: int
    sync_events: int
    non_sync_jitter_ns: int | None  # None: not traced
    sync_share_of_jitter: float | None
    holder_delay_ns: int | None
    types: dict[str, TypeStats]
    objects: list[TopObject]
    causes: list[CauseShare]
    critical_path: CriticalPath
    frames: Frames
    fit: Fit | None
    unmatched: dict[str, int]
    dropped: int
    lost_events: int


class Summary(_SummaryBase, total=False):
    subframes: Stats
    overhead: OverheadJson  # absent when `jitterscope analyze` finished a cut-short run


def read(run: Run) -> Summary:
    """The run's summary.json as a `Summary` (keys not named above are left out)."""
    return read_record(run.summary, Summary, run.path / "summary.json")
