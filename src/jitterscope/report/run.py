"""The page of one measure run: plain data (data.py) -> figures (figures.py) -> run.html.j2."""

from __future__ import annotations

from jitterscope.report.data import build_report_data
from jitterscope.report.figures import KIND_COLORS, build_figures
from jitterscope.report.page import Figure, render_page
from jitterscope.report.results import ReportData
from jitterscope.rundir import Run

SECTIONS = [
    ("cpus", "CPUs"),
    ("histograms", "Durations"),
    ("timeline", "Over time"),
    ("sources", "Sources"),
    ("chains", "Chains"),
    ("unexplained", "Unexplained"),
]


def render_html(data: ReportData, figures: list[Figure]) -> str:
    h = data["header"]
    # Bars in the CPU and source tables are scaled to the largest value shown.
    scale = {
        "cpus": max((float(c.get("noise_ppm", 0.0)) for c in data["cpus"]), default=0.0) or 1.0,
        "sources": max((s["share"] for s in data["sources"]), default=0.0) or 1.0,
    }
    return render_page(
        "run.html.j2",
        title=f"jitterscope report: {h['host']} {h['start'] or ''}",
        data=data,
        figures=figures,
        nav=SECTIONS,
        warnings=h["warnings"],
        colors=KIND_COLORS,
        bar_scale=scale,
    )


def build_page(run: Run) -> tuple[str, list[Figure]]:
    """The page and its figures for a measure run."""
    data = build_report_data(run)
    figures = build_figures(data)
    return render_html(data, figures), figures
