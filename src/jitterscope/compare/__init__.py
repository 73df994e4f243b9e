"""Compare two runs of the same kind: which noise sources are new, gone or changed, with tests.

`compare_runs` loads both runs and hands them to their kind's comparer: for
measure runs `compare_loaded` restricts both runs to the CPUs they share, builds
a `Sample` of each (sample.py) and diffs them (diff.py, statistics in stats.py);
cluster runs are compared node by node (cluster.py). `render_text` prints any result.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from jitterscope.compare import cluster
from jitterscope.compare import render as measure_render
from jitterscope.compare.comparable import as_json, basis
from jitterscope.compare.diff import Thresholds, diff
from jitterscope.compare.sample import Sample, from_run, pool, source_key
from jitterscope.errors import JitterscopeError
from jitterscope.pipeline import compare as pipeline_compare
from jitterscope.rundir import Run, load_run
from jitterscope.sync import compare as sync_compare
from jitterscope.sync import render as sync_render

__all__ = ["Sample", "Thresholds", "compare_loaded", "compare_runs", "diff", "from_run", "pool", "render_text",
           "source_key"]


def _run_info(run: Run) -> dict[str, Any]:
    return {"id": run.meta.get("id"), "path": str(run.path), "host": run.meta.get("host"),
            "kernel": run.meta.get("kernel"), "cpus": run.cpus, "duration_s": run.meta.get("duration_s"),
            "tracing": run.tracing, "lost_events": int(run.meta.get("lost_events", 0) or 0)}


def compare_loaded(base: Run, new: Run, th: Thresholds | None = None,
                   only: set[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Compare two loaded runs.  `only` restricts the sources (source_key keys) to a family of hypotheses
    named in advance (`tune verify`'s targets): the tests and their Benjamini-Hochberg family are then those."""
    cpus = sorted(set(base.cpus) & set(new.cpus))
    if not cpus:
        raise JitterscopeError(f"nothing to compare: BASE measured CPUs {base.cpus}, NEW measured {new.cpus}")
    not_compared = [f"CPU {c}: only in BASE" for c in sorted(set(base.cpus) - set(new.cpus))]
    not_compared += [f"CPU {c}: only in NEW" for c in sorted(set(new.cpus) - set(base.cpus))]
    on = basis(base, new)
    not_compared += on.not_comparable
    notes = list(on.notes)
    for w, r in (("BASE", base), ("NEW", new)):
        lost = int(r.meta.get("lost_events", 0) or 0)
        if lost:
            notes.append(f"{w} lost {lost} trace events: part of its noise is misattributed to unexplained")
    if base.meta.get("host") != new.meta.get("host"):
        notes.append(f"different hosts: {base.meta.get('host')} vs {new.meta.get('host')}")
    b, n = (from_run(r, cpus, on.threshold_ns, on.block_ns) for r in (base, new))
    if not on.sources:   # untraced on one side: its noise is all "unexplained"; no source is comparable
        b.occurrences, n.occurrences = {}, {}
    if only is not None:
        for s in (b, n):
            s.occurrences = {k: v for k, v in s.occurrences.items() if k in only}
    result = diff(b, n, th, frozenset(on.untested_kinds), on.test_totals)
    return {"runs": {"base": _run_info(base), "new": _run_info(new)}, "compared_cpus": cpus,
            "basis": as_json(on), "not_compared": not_compared, "notes": notes, **result}


class Kind(NamedTuple):
    """How one kind of run (meta.json "kind") is compared and printed."""

    compare: Callable[[Run, Run, Thresholds | None], dict[str, Any]]
    render: Callable[[dict[str, Any]], str]


KINDS = {"measure": Kind(compare_loaded, measure_render.render_compare),
         "cluster": Kind(cluster.compare_clusters, cluster.render_compare),
         "pipeline": Kind(pipeline_compare.compare_pipelines, pipeline_compare.render_compare),
         "sync": Kind(sync_compare.compare_syncs, sync_render.render_compare)}


def _kind(run: Run) -> str:
    return str(run.meta.get("kind", "measure"))


def compare_runs(base: str | Path, new: str | Path, th: Thresholds | None = None) -> dict[str, Any]:
    """Load and compare two run directories of the same kind (plain data; see diff.py, cluster.py)."""
    b, n = load_run(base), load_run(new)
    if _kind(b) != _kind(n):
        what = {"measure": "a single-machine run", "cluster": "a cluster run", "sync": "a sync run"}
        raise JitterscopeError(f"cannot compare {what.get(_kind(b), _kind(b))} ({base}) with "
                               f"{what.get(_kind(n), _kind(n))} ({new}): compare runs of one kind")
    if _kind(b) not in KINDS:
        raise JitterscopeError(f"{base}: runs of kind {_kind(b)} are not compared"
                               + ("; compare the before/ and after/ runs inside" if _kind(b) == "tune" else ""))
    return KINDS[_kind(b)].compare(b, n, th)


def render_text(res: dict[str, Any]) -> str:
    """The terminal text of any result of `compare_runs`."""
    return KINDS[str(res.get("kind", "measure"))].render(res)
