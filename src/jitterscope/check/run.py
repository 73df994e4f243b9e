"""One health check: measure briefly (the `measure` library, in-process), then judge the run (verdict.py)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from jitterscope import session as lifecycle
from jitterscope.check.verdict import Limits, Verdict, judge
from jitterscope.compare.thresholds import Thresholds
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
    """Measure into --out, or into a journalled scratch directory (removed once judged, and by the
    watchdog or `restore` if this check is killed; a raw capture in it is then kept, not deleted)."""
    if opts.out is not None:
        verdict = _judged(opts, opts.out)
        verdict.run = str(opts.out)
        return verdict
    with lifecycle.guard("check") as j:
        scratch = j.scratch_dir("jitterscope-check-", keep="run", hint="a killed check's measurement")
        entry = j.entries[-1]
        try:
            verdict = _judged(opts, scratch / "run")
        except BaseException:  # a measurement that failed keeps its directory, which its error names
            j.forget(entry)
            raise
        shutil.rmtree(scratch / "run", ignore_errors=True)  # judged: nothing to keep (undo removes the rest)
        return verdict


def _judged(opts: CheckOptions, out: Path) -> Verdict:
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
    if opts.baseline is None:
        return judge(run.summary, opts.limits, None)
    from jitterscope.compare import compare_loaded  # lazy: its tests bring scipy.stats, 1.4 s before measuring

    return judge(run.summary, opts.limits, compare_loaded(opts.baseline, run, opts.thresholds))
