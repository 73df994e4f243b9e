"""How much of a sync run's wall time was jitterscope's own: its start-up before CMD ran (Python, imports,
the trace instance), the analysis after CMD ended (stopping the trace, sync/build.py) and the report.

Every time is CLOCK_MONOTONIC; the process's own start comes from /proc/self/stat (clock ticks since boot,
10 ms on most kernels), set against CLOCK_BOOTTIME so a suspend in between does not count."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jitterscope.rundir import write_json

if TYPE_CHECKING:
    from jitterscope.sync.summary import OverheadJson, Summary


@dataclass
class Overhead:
    """Seconds: start-up + program + analysis + report = wall."""

    startup_s: float  # jitterscope started -> CMD started
    program_s: float  # CMD started -> CMD seen to end
    analysis_s: float  # CMD ended -> tables and summary written
    report_s: float | None  # report.html (None: not yet written, or --no-report)
    wall_s: float  # jitterscope started -> its work done

    def to_json(self) -> OverheadJson:
        own = self.wall_s - self.program_s

        def r4(v: float | None) -> float | None:
            return round(v, 4) if v is not None else None

        return {
            "startup_s": round(self.startup_s, 4),
            "program_s": round(self.program_s, 4),
            "analysis_s": round(self.analysis_s, 4),
            "report_s": r4(self.report_s),
            "wall_s": round(self.wall_s, 4),
            "own_s": round(own, 4),
            "own_share": round(own / self.wall_s, 4) if self.wall_s > 0 else None,
            "ratio": round(self.wall_s / self.program_s, 4) if self.program_s > 0 else None,
        }


def process_start_ns() -> int:
    """When this process started, CLOCK_MONOTONIC ns."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, counted after the command name
    except (OSError, ValueError, IndexError):
        return time.monotonic_ns()
    since_boot = ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    return time.monotonic_ns() - (time.clock_gettime_ns(time.CLOCK_BOOTTIME) - since_boot)


def measure(started: int, program_start: int, program_end: int, analysed: int, reported: int | None) -> Overhead:
    """From CLOCK_MONOTONIC ns marks: jitterscope's start, CMD's start and end, the analysis and report done."""
    s = 1e-9
    end = reported if reported is not None else analysed
    return Overhead(
        startup_s=max(program_start - started, 0) * s,
        program_s=max(program_end - program_start, 0) * s,
        analysis_s=max(analysed - program_end, 0) * s,
        report_s=(reported - analysed) * s if reported is not None else None,
        wall_s=max(end - started, 0) * s,
    )


def record(run_dir: Path, summary: Summary, overhead: Overhead) -> None:
    """Put `overhead` into the run's summary.json (written by the analysis before the times were known)."""
    summary["overhead"] = overhead.to_json()
    write_json(run_dir / "summary.json", summary)
