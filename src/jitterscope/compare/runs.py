"""Compare two run directories of one kind: each kind of run (meta.json "kind") names its comparer and
its renderer here, so that the compare package's own modules never import the kinds' packages."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from jitterscope.compare import cluster, compare_loaded
from jitterscope.compare import render as measure_render
from jitterscope.compare.diff import Thresholds
from jitterscope.errors import JitterscopeError
from jitterscope.pipeline import compare as pipeline_compare
from jitterscope.rundir import Run, load_run
from jitterscope.sync import compare as sync_compare
from jitterscope.sync import render as sync_render


class Kind(NamedTuple):
    """How one kind of run (meta.json "kind") is compared and printed."""

    compare: Callable[[Run, Run, Thresholds | None], dict[str, Any]]
    render: Callable[[dict[str, Any]], str]


KINDS = {
    "measure": Kind(compare_loaded, measure_render.render_compare),
    "cluster": Kind(cluster.compare_clusters, cluster.render_compare),
    "pipeline": Kind(pipeline_compare.compare_pipelines, pipeline_compare.render_compare),
    "sync": Kind(sync_compare.compare_syncs, sync_render.render_compare),
}


def _kind(run: Run) -> str:
    return str(run.meta.get("kind", "measure"))


def compare_runs(base: str | Path, new: str | Path, th: Thresholds | None = None) -> dict[str, Any]:
    """Load and compare two run directories of the same kind (plain data; see diff.py, cluster.py)."""
    b, n = load_run(base), load_run(new)
    if _kind(b) != _kind(n):
        what = {"measure": "a single-machine run", "cluster": "a cluster run", "sync": "a sync run"}
        raise JitterscopeError(
            f"cannot compare {what.get(_kind(b), _kind(b))} ({base}) with "
            f"{what.get(_kind(n), _kind(n))} ({new}): compare runs of one kind"
        )
    if _kind(b) not in KINDS:
        raise JitterscopeError(
            f"{base}: runs of kind {_kind(b)} are not compared"
            + ("; compare the before/ and after/ runs inside" if _kind(b) == "tune" else "")
        )
    return KINDS[_kind(b)].compare(b, n, th)


def render_text(res: dict[str, Any]) -> str:
    """The terminal text of any result of `compare_runs`."""
    return KINDS[str(res.get("kind", "measure"))].render(res)
