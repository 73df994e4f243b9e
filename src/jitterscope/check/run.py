"""One health check: measure briefly (the `measure` library, in-process), then judge the run (verdict.py)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from jitterscope.check.verdict import Limits, Verdict, judge
from jitterscope.compare import Thresholds, compare_loaded
from jitterscope.measure.lifecycle import measure
from jitterscope.rundir import Run, load_run


@dataclass
class CheckOptions:
    cpus: list[int]
    duration_ns: float
    threshold_ns: float
    limits: Limits
    priority: int | None = None
    trace: bool = True
    buffer_kb: int = 4096
    baseline: Run | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    out: Path | None = None  # keep the check's run here; None: a scratch directory, removed once judged


def check(opts: CheckOptions) -> Verdict:
    scratch = None if opts.out is not None else Path(tempfile.mkdtemp(prefix="jitterscope-check-"))
    out = opts.out if opts.out is not None else Path(str(scratch)) / "run"
    run_dir = measure(
        cpus=opts.cpus,
        duration_ns=opts.duration_ns,
        threshold_ns=opts.threshold_ns,
        out_dir=out,
        trace=opts.trace,
        priority=opts.priority,
        buffer_kb=opts.buffer_kb,
    )
    run = load_run(run_dir)
    comparison = compare_loaded(opts.baseline, run, opts.thresholds) if opts.baseline is not None else None
    verdict = judge(run.summary, opts.limits, comparison)
    if scratch is None:
        verdict.run = str(run_dir)
    else:  # only once judged: a measurement that failed keeps its directory, which its error names
        shutil.rmtree(scratch, ignore_errors=True)
    return verdict
