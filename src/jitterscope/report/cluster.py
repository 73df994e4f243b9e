"""The page of a cluster run: per-node tables and a node x source heatmap (cluster.html.j2).

Data first (`cluster_page_data`, `heatmap_data`), then the figure, then the
template, like the page of a measure run (run.py).  A `cluster bsp` run shows
its measured runtime against the predictions instead of the heatmap.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from jitterscope import plotting
from jitterscope.cluster.bsp_results import BspSummary
from jitterscope.cluster.layout import ClusterRun
from jitterscope.cluster.summary import node_key, source_matrix
from jitterscope.report.page import Column, Figure, PageTable, render_page
from jitterscope.runcheck import read_record
from jitterscope.rundir import Run

TOP_SOURCES = 15
MAX_NODES_IN_HEATMAP = 200
SOURCE_ROWS = 30


class Heatmap(TypedDict):
    """Nodes (noisiest first) x sources, ppm; empty for a `cluster bsp` run."""

    nodes: list[str]
    sources: list[str]
    ppm: list[list[float]]


class ClusterPage(TypedDict):
    """What cluster.html.j2 reads as `data`."""

    id: str | None
    nodes: int
    start: str | None
    command_line: str
    tables: list[PageTable]
    heatmap: Heatmap


def heatmap_data(run: ClusterRun) -> Heatmap:
    """Nodes (noisiest first) x the sources with most total noise, in ppm."""
    nodes = [
        {"host": n["host"], "cpu": n["cpu"], "rank": n["rank"], "summary": run.node_summary(n["host"], n["cpu"])}
        for n in run.nodes
    ]
    if not nodes:
        return {"nodes": [], "sources": [], "ppm": []}
    features, ppm = source_matrix(nodes)
    names = [node_key(n["host"], n["cpu"]) for n in nodes]
    cols = list(np.argsort(-ppm.sum(axis=0))[:TOP_SOURCES])
    rows = list(np.argsort(-ppm.sum(axis=1))[:MAX_NODES_IN_HEATMAP])
    return {
        "nodes": [names[i] for i in rows],
        "sources": [features[j] for j in cols],
        "ppm": [[round(float(ppm[i, j]), 3) for j in cols] for i in rows],
    }


def heatmap_svg(data: Heatmap) -> str:
    from matplotlib.colors import LogNorm  # lazy, as in plotting.pyplot

    plt = plotting.pyplot()
    m = np.array(data["ppm"], dtype=float)
    if m.size == 0:
        return ""
    fig, ax = plt.subplots(figsize=(1.2 + 0.45 * m.shape[1], 1.5 + 0.28 * m.shape[0]))
    shown = np.where(m > 0, m, np.nan)
    finite = m[m > 0]
    norm = LogNorm(vmin=max(float(finite.min()), 0.1), vmax=float(finite.max())) if finite.size else None
    im = ax.imshow(shown, aspect="auto", cmap="viridis", norm=norm, interpolation="nearest")
    ax.set_xticks(range(m.shape[1]), data["sources"], rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(m.shape[0]), data["nodes"], fontsize=7)
    ax.set_title("noise per node and source (ppm, log scale; blank = none)", fontsize=9)
    fig.colorbar(im, ax=ax, label="ppm")
    fig.tight_layout()
    return plotting.svg_text(fig)


def _bsp_tables(s: BspSummary) -> list[PageTable]:
    m = s["measured"]
    rows = [["measured", m["runtime_s"], m["slowdown"], None]]
    rows += [
        [k, p["runtime_s"], p["slowdown"], p["runtime_rel_error"]]
        for k, p in s.get("predictions", {}).items()
        if "runtime_s" in p
    ]
    return [
        {
            "id": "bsp",
            "title": f"Bulk-synchronous job: {s['run']['phases']} phases, ideal {m['ideal_s']:.6f} s",
            "columns": [
                Column(""),
                Column("runtime (s)", "{:.6f}"),
                Column("slowdown", "sgnpct"),
                Column("error vs measured", "sgnpct"),
            ],
            "rows": rows,
        },
        {
            "id": "nodes",
            "title": "Nodes",
            "columns": [
                Column("node"),
                Column("rank", "int"),
                Column("compute mean", "ns"),
                Column("noise/phase", "ns"),
                Column("noise (ppm)", "ppm"),
                Column("slowest in", "pct"),
            ],
            "rows": [
                [n["node"], n["rank"], n["compute_mean_ns"], n["noise_mean_ns"], n["noise_ppm"], n["slowest_share"]]
                for n in s["nodes"]
            ],
        },
    ]


def _measure_tables(s: dict[str, Any]) -> list[PageTable]:
    return [
        {
            "id": "nodes",
            "title": "Noise per node",
            "columns": [
                Column("node"),
                Column("rank", "int"),
                Column("noise (ppm)", "ppm"),
                Column("detours", "int"),
                Column("p99", "ns"),
                Column("max", "ns"),
                Column("top source"),
            ],
            "rows": [
                [r["node"], r["rank"], r["noise_ppm"], r["detours"], r["p99_ns"], r["max_ns"], r["top_source"]]
                for r in s["nodes"]
            ],
        },
        {
            "id": "sources",
            "title": "Sources by nodes hit",
            "columns": [
                Column("source"),
                Column("nodes", "int"),
                Column("mean (ppm)", "ppm"),
                Column("worst node"),
                Column("worst (ppm)", "ppm"),
            ],
            "rows": [
                [f"{x['kind']}:{x['name']}", x["nodes"], x["mean_ppm"], x["max_node"], x["max_ppm"]]
                for x in s["sources"][:SOURCE_ROWS]
            ],
        },
        {
            "id": "outliers",
            "title": "Outlier nodes",
            "empty": "none",
            "note": f"Method: {s['outlier_method']['name']}, cutoff {s['outlier_method']['cutoff']}.",
            "columns": [
                Column("node"),
                Column("source"),
                Column("ppm", "ppm"),
                Column("typical (ppm)", "ppm"),
                Column("robust z", "{:.1f}"),
            ],
            "rows": [
                [o["node"], x["source"], x["ppm"], x["typical_ppm"], x["z"]]
                for o in s["outliers"]
                for x in o["sources"]
            ],
        },
    ]


def cluster_page_data(run: ClusterRun) -> ClusterPage:
    """What the cluster page shows: the run line, its tables and (cluster measure) the heatmap's data."""
    s, bsp = run.summary, "measured" in run.summary
    return {
        "id": run.meta.get("id"),
        "nodes": len(run.nodes),
        "start": run.meta.get("start"),
        "command_line": " ".join(run.meta.get("command_line", [])),
        "tables": _bsp_tables(read_record(s, BspSummary, run.path / "summary.json")) if bsp else _measure_tables(s),
        "heatmap": {"nodes": [], "sources": [], "ppm": []} if bsp else heatmap_data(run),
    }


def build_page(run: Run) -> tuple[str, list[Figure]]:
    """The page and its figure (the heatmap, when there is one) for a cluster run."""
    data = cluster_page_data(
        ClusterRun(run.path, run.meta, run.summary, meta_model=run.meta_model, summary_model=run.summary_model)
    )
    svg = heatmap_svg(data["heatmap"])
    figures = [Figure("heatmap", "noise per node and source", svg)] if svg else []
    nav = [(t["id"], t["title"].split(":")[0]) for t in data["tables"]]
    if figures:
        nav.append(("heatmap", "Node x source"))
    html = render_page(
        "cluster.html.j2", title=f"jitterscope cluster report: {data['id']}", data=data, figures=figures, nav=nav
    )
    return html, figures
