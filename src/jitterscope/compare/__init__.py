"""Compare two runs: which noise sources are new, gone or changed, with tests.

`compare_runs` restricts both runs to the CPUs they share, builds a `Sample`
of each (sample.py) and diffs them (diff.py, statistics in stats.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jitterscope.compare.diff import Thresholds, diff
from jitterscope.compare.sample import Sample, from_run, pool, source_key
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import Run, load_run

__all__ = ["Thresholds", "compare_runs", "compare_loaded", "from_run", "pool", "source_key", "Sample", "diff"]


def _run_info(run: Run) -> dict[str, Any]:
    return {"id": run.meta.get("id"), "path": str(run.path), "host": run.meta.get("host"),
            "kernel": run.meta.get("kernel"), "cpus": run.cpus, "duration_s": run.meta.get("duration_s"),
            "tracing": run.tracing, "lost_events": int(run.meta.get("lost_events", 0) or 0)}


def compare_loaded(base: Run, new: Run, th: Thresholds | None = None) -> dict[str, Any]:
    cpus = sorted(set(base.cpus) & set(new.cpus))
    if not cpus:
        raise JitterscopeError(f"nothing to compare: BASE measured CPUs {base.cpus}, NEW measured {new.cpus}")
    not_compared = [f"CPU {c}: only in BASE" for c in sorted(set(base.cpus) - set(new.cpus))]
    not_compared += [f"CPU {c}: only in NEW" for c in sorted(set(new.cpus) - set(base.cpus))]
    if not (base.tracing and new.tracing):
        which = " and ".join(w for w, r in (("BASE", base), ("NEW", new)) if not r.tracing)
        not_compared.append(f"sources: attribution is off in {which}; only total and unexplained noise compared")
    notes = []
    for w, r in (("BASE", base), ("NEW", new)):
        lost = int(r.meta.get("lost_events", 0) or 0)
        if lost:
            notes.append(f"{w} lost {lost} trace events: part of its noise is misattributed to unexplained")
    if base.meta.get("host") != new.meta.get("host"):
        notes.append(f"different hosts: {base.meta.get('host')} vs {new.meta.get('host')}")
    result = diff(from_run(base, cpus), from_run(new, cpus), th)
    return {"runs": {"base": _run_info(base), "new": _run_info(new)}, "compared_cpus": cpus,
            "not_compared": not_compared, "notes": notes, **result}


def compare_runs(base: str | Path, new: str | Path, th: Thresholds | None = None) -> dict[str, Any]:
    """Load and compare two run directories (plain data; see diff.py)."""
    return compare_loaded(load_run(base), load_run(new), th)
