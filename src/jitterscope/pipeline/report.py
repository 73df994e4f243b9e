"""The HTML page of a pipeline run (report/templates/pipeline.html.j2): data first, then figures."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from jitterscope import plotting
from jitterscope.humanize import duration_ns
from jitterscope.pipeline.plots import gantt, latency_histogram, latency_series
from jitterscope.report.page import Column, Figure, PageData, PageTable, Planned, draw_figures, render_page
from jitterscope.rundir import Run

NS = "ns"


def page_data(run: Run) -> PageData:
    s, m = run.summary, run.meta
    r, lat = s["run"], s["latency"]
    headline = (
        f"{r['graph']}: {r['heuristic']} on {r['threads']} threads, {r['memory']} memory, "
        f"{r['iterations']:,} iterations on CPUs {', '.join(map(str, r['cpus']))}; started {m.get('start')}"
    )
    tables: list[PageTable] = [
        {
            "id": "latency",
            "title": "Latency per iteration",
            "figures": ["histogram", "series"],
            "columns": [Column("n", "int")]
            + [Column(k, NS) for k in ("mean", "sd", "min", "p50", "p99", "p999", "max")],
            "rows": [[lat["n"], lat["mean"], lat["sd"], lat["min"], lat["p50"], lat["p99"], lat["p999"], lat["max"]]],
            "note": "latency = end of the iteration's last sub-box - its release; sd = standard deviation",
        }
    ]
    if s.get("subboxes"):
        tables.append(
            {
                "id": "subboxes",
                "title": "Sub-boxes",
                "figures": ["gantt-median", "gantt-worst"],
                "columns": [
                    Column("sub-box"),
                    Column("thread", "int"),
                    Column("start (mean)", NS),
                    Column("duration mean", NS),
                    Column("sd", NS),
                    Column("max", NS),
                ],
                "rows": [
                    [x["name"], x["thread"], x["start_mean_ns"], x["mean_ns"], x["sd_ns"], x["max_ns"]]
                    for x in s["subboxes"]
                ],
            }
        )
    late = s.get("late")
    if late:
        tables.append(
            {
                "id": "late",
                "title": f"Late iterations (latency >= p{late['percentile']:g})",
                "columns": [
                    Column("source"),
                    Column("per late iteration", NS),
                    Column("per typical", NS),
                    Column("excess", NS),
                    Column("late iterations hit", "int"),
                ],
                "rows": [
                    [
                        f"{x['kind']}:{x['name']}",
                        x["late_ns"],
                        x["typical_ns"],
                        x["excess_ns"],
                        x["late_iterations_hit"],
                    ]
                    for x in late["sources"]
                ],
                "empty": "no other context ran on the pipeline's CPUs during late iterations",
                "note": f"{late['count']} late iterations, on average "
                f"{duration_ns(float(late.get('latency_excess_ns', 0)))} over the typical (<= median) "
                f"ones; time other contexts took on the pipeline's CPUs while they ran",
            }
        )
    sch = m.get("schedule", {})
    tables.append(
        {
            "id": "schedule",
            "title": "Schedule",
            "columns": [Column("what"), Column("value")],
            "rows": [
                ["heuristic", sch.get("heuristic")],
                ["memory", sch.get("memory")],
                ["threads", sch.get("threads")],
                ["sub-boxes", sch.get("subboxes")],
                ["signals", sch.get("signals")],
                ["pool bytes", f"{sch.get('pool_bytes', 0):,}"],
                ["waits", m.get("options", {}).get("wait")],
                ["outputs digest", s.get("outputs", {}).get("digest")],
            ],
        }
    )
    return {"id": m.get("id"), "headline": headline, "tables": tables}


def _gantt(run: Run, iteration: int, title: str) -> Callable[[], Any]:
    """What draws one iteration's measured schedule (a job for plotting.drawn)."""

    t = run.table("subboxes")
    it = t.column("iteration").to_numpy()
    sel = np.flatnonzero(it == iteration)
    names = t.column("subbox").take(sel).to_pylist()
    boxes = t.column("box").take(sel).to_pylist()
    thread = t.column("thread").to_numpy()[sel]
    start = t.column("start_ns").to_numpy()[sel] / 1e3
    dur = t.column("duration_ns").to_numpy()[sel] / 1e3
    bars = [(int(th), float(a), float(a + d), n, b) for th, a, d, n, b in zip(thread, start, dur, names, boxes)]
    lanes = [f"thread{i}" for i in range(int(thread.max()) + 1 if len(thread) else 1)]
    return partial(gantt, bars, lanes, title, "us since the iteration's release")


def figures(run: Run) -> list[Figure]:

    lat = run.table("iterations").column("latency_ns").to_numpy()
    planned: list[Planned] = [
        ("histogram", "Latency distribution", plotting.drawn, partial(latency_histogram, lat, "latency")),
        ("series", "Latency per iteration", plotting.drawn, partial(latency_series, lat, "latency over the run")),
    ]
    if run.has_table("subboxes") and len(lat):
        med = int(np.argsort(lat)[len(lat) // 2])
        worst = int(np.argmax(lat))
        planned.append(
            (
                "gantt-median",
                f"Measured schedule of a median iteration ({med})",
                plotting.drawn,
                _gantt(run, med, f"iteration {med} (median latency)"),
            )
        )
        planned.append(
            (
                "gantt-worst",
                f"Measured schedule of the slowest iteration ({worst})",
                plotting.drawn,
                _gantt(run, worst, f"iteration {worst} (slowest)"),
            )
        )
    return draw_figures(planned)


def build_page(run: Run) -> tuple[str, list[Figure]]:
    data = page_data(run)
    figs = figures(run)
    nav = [(t["id"], t["title"].split(" (")[0]) for t in data["tables"]]
    html = render_page(
        "pipeline.html.j2",
        title=f"jitterscope pipeline: {run.summary['run']['graph']}",
        data=data,
        figures=figs,
        nav=nav,
        warnings=list(run.meta.get("warnings", [])),
    )
    return html, figs
