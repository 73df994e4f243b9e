"""What a protect session hands to the run's builder besides the raw records (session.py fills it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jitterscope.protect.results import ControllerEnd, ProgramInfo, Summary, ThresholdInfo

RECORDS = "raw/controller.bin"  # the controller's records, inside the run directory


@dataclass
class Outcome:
    """What the session hands to build.py besides the records."""

    signal: str = ""
    signal_reason: str = ""
    threshold: ThresholdInfo = field(default_factory=lambda: ThresholdInfo())
    s_ns: float = 0.0
    end: ControllerEnd = field(default_factory=lambda: ControllerEnd())
    programs: list[ProgramInfo] = field(default_factory=list)
    interrupted: bool = False
    ended_by: str = ""
    error: str | None = None
    deadline_ns: float | None = None
    peak: tuple[float, float] | None = None
    started_unix_ns: int = 0
    wall_s: float = 0.0
    controlling: bool = False  # the controller was told to go: there are records to keep
    summary: Summary | None = None  # the built run's summary.json, once built
