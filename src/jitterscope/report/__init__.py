"""The HTML report of one run: plain data (data.py) -> figures (figures.py) -> page (html.py)."""

from __future__ import annotations

import os
from pathlib import Path

from jitterscope.errors import JitterscopeError
from jitterscope.outpath import check_file
from jitterscope.rundir import load_run


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write `report.html` (default: inside the run) and each figure as
    `<stem>-<figure>.svg` beside it; return the HTML's path."""
    from jitterscope.report.data import build_report_data
    from jitterscope.report.figures import build_figures
    from jitterscope.report.html import render_html

    run = load_run(run_dir, check_tables=False)
    if run.meta.get("kind") == "cluster":  # per-node tables and a node x source heatmap
        from jitterscope.cluster.report import build_figures, build_report_data  # type: ignore[no-redef]
        from jitterscope.cluster.report import render_page as render_html  # type: ignore[no-redef]
    run = load_run(run_dir)
    out = Path(out) if out is not None else Path(run_dir) / "report.html"
    if out.is_dir():
        out = out / "report.html"
    check_file(out, "report")   # before any work, and no parent directory is created
    data = build_report_data(run)
    figs = build_figures(data)
    page = render_html(data, figs)
    try:
        for fig_id, (_, svg) in figs.items():
            _atomic_write(out.with_name(f"{out.stem}-{fig_id}.svg"), svg)
        _atomic_write(out, page)
    except OSError as err:
        raise JitterscopeError(f"{out}: cannot write report ({err.strerror})") from None
    return out


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
