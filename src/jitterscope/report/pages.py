"""Which page each kind of run gets: the dispatch lives here, not in the package's __init__, so that
the kinds' page builders (which use report/page.py) never import their own importer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jitterscope.errors import JitterscopeError
from jitterscope.report.page import Figure, page_path, write_page
from jitterscope.rundir import Run, load_run

PageBuilder = Callable[[Run], "tuple[str, list[Figure]]"]


def _builders() -> dict[str, PageBuilder]:
    # Imported here: each builder pulls in matplotlib, needed only once a page is drawn.
    from jitterscope.pipeline import report as pipeline
    from jitterscope.place import report as place
    from jitterscope.report import cluster, run
    from jitterscope.sync import report as sync

    return {
        "measure": run.build_page,
        "cluster": cluster.build_page,
        "pipeline": pipeline.build_page,
        "sync": sync.build_page,
        "place": place.build_page,
    }


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write the run's page (default: RUN/report.html) and each figure as `<stem>-<figure>.svg`
    beside it; return the page's path."""
    run = load_run(run_dir)
    out = page_path(out, Path(run_dir) / "report.html")  # before any work
    builders = _builders()
    if run.kind not in builders:
        raise JitterscopeError(
            f"{run_dir}: a {run.kind} directory has no report page of its own"
            + ("; its page is verify.html" if run.kind == "tune" else "")
        )
    html, figures = builders[run.kind](run)
    return write_page(out, html, figures)
