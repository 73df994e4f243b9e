"""Which page each kind of run gets: the kind's own page builder (kinds.py), written through
report/page.py.  The dispatch lives here, not in the package's __init__, so that the kinds' page
builders (which use report/page.py) never import their own importer."""

from __future__ import annotations

from pathlib import Path

from jitterscope.errors import JitterscopeError
from jitterscope.report.page import page_path, write_page
from jitterscope.rundir import load_run


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write the run's page (default: RUN/report.html) and each figure as `<stem>-<figure>.svg`
    beside it; return the page's path."""
    run = load_run(run_dir)
    out = page_path(out, Path(run_dir) / "report.html")  # before any work
    kind = run.spec
    if kind.page is None:
        raise JitterscopeError(
            f"{run_dir}: a {run.kind} directory has no report page of its own"
            + (f"; {kind.no_page}" if kind.no_page else "")
        )
    html, figures = kind.page(run)
    return write_page(out, html, figures)
