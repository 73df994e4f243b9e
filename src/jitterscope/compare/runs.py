"""Compare two run directories of one kind: each kind of run (meta.json "kind") names its comparer and
its renderer in its own kind.py (kinds.py), so that the compare package never imports the kinds' packages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jitterscope import kinds
from jitterscope.compare.diff import Thresholds
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import load_run


def compare_runs(base: str | Path, new: str | Path, th: Thresholds | None = None) -> dict[str, Any]:
    """Load and compare two run directories of the same kind (plain data; see diff.py, cluster.py)."""
    b, n = load_run(base), load_run(new)
    if b.kind != n.kind:
        raise JitterscopeError(
            f"cannot compare {kinds.label(b.kind)} ({base}) with {kinds.label(n.kind)} ({new}): "
            "compare runs of one kind"
        )
    kind = b.spec
    if kind.comparison is None:
        raise JitterscopeError(
            f"{base}: runs of kind {b.kind} are not compared" + (f"; {kind.no_compare}" if kind.no_compare else "")
        )
    return kind.comparison.compare(b, n, th)


def render_text(res: dict[str, Any]) -> str:
    """The terminal text of any result of `compare_runs`."""
    kind = kinds.get(str(res.get("kind", "measure")))
    if kind is None or kind.comparison is None:
        raise ValueError(f"not a comparison result (kind {res.get('kind')!r})")
    return kind.comparison.render(res)
