"""Report and compare for cluster runs: per-node tables and a node x source heatmap.

`jitterscope report` and `compare` dispatch here when meta.json's kind is
"cluster" (the hooks are one `if` in report/__init__.py and commands/compare.py):
the report takes this module's data, figures and page builders and writes them
as it writes any run's.  Data first (`heatmap_data`, `compare_clusters`), then
rendering.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np

from jitterscope import plotting
from jitterscope.cluster.layout import ClusterRun, load_cluster
from jitterscope.cluster.summary import node_key, source_matrix
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import Run

TOP_SOURCES = 15
MAX_NODES_IN_HEATMAP = 200


def heatmap_data(run: ClusterRun) -> dict[str, Any]:
    """Nodes (noisiest first) x the sources with most total noise, in ppm."""
    nodes = [{"host": n["host"], "cpu": n["cpu"], "rank": n["rank"],
              "summary": run.node_summary(n["host"], n["cpu"])} for n in run.nodes]
    if not nodes:
        return {"nodes": [], "sources": [], "ppm": []}
    features, ppm = source_matrix(nodes)
    names = [node_key(n["host"], n["cpu"]) for n in nodes]
    cols = list(np.argsort(-ppm.sum(axis=0))[:TOP_SOURCES])
    rows = list(np.argsort(-ppm.sum(axis=1))[:MAX_NODES_IN_HEATMAP])
    return {"nodes": [names[i] for i in rows], "sources": [features[j] for j in cols],
            "ppm": [[round(float(ppm[i, j]), 3) for j in cols] for i in rows]}


def heatmap_svg(data: dict[str, Any]) -> str:
    from matplotlib.colors import LogNorm   # lazy, as in plotting.pyplot

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


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(run: ClusterRun, data: dict[str, Any], svg: str) -> str:
    s = run.summary
    title = f"jitterscope cluster report: {run.meta.get('id')}"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p>{len(run.nodes)} nodes, started {html.escape(str(run.meta.get('start')))}, "
             f"command: <code>{html.escape(' '.join(run.meta.get('command_line', [])))}</code></p>"]
    if "measured" in s:  # cluster bsp
        m = s["measured"]
        rows = [["measured", f"{m['runtime_s']:.6f}", f"{m['slowdown'] * 100:+.2f}%", ""]]
        for k, p in s.get("predictions", {}).items():
            if "runtime_s" in p:
                rows.append([k, f"{p['runtime_s']:.6f}", f"{p['slowdown'] * 100:+.2f}%",
                             f"{p['runtime_rel_error'] * 100:+.2f}%"])
        parts += [f"<h2>Bulk-synchronous job: {s['run']['phases']} phases, ideal {m['ideal_s']:.6f} s</h2>",
                  _table(["", "runtime (s)", "slowdown", "error vs measured"], rows),
                  "<h2>Nodes</h2>",
                  _table(["node", "rank", "compute mean (ns)", "noise/phase (ns)", "noise (ppm)", "slowest in"],
                         [[n["node"], n["rank"], n["compute_mean_ns"], n["noise_mean_ns"], n["noise_ppm"],
                           f"{n['slowest_share'] * 100:.1f}%"] for n in s["nodes"]])]
    else:
        parts += ["<h2>Noise per node</h2>",
                  _table(["node", "rank", "noise (ppm)", "detours", "p99 (ns)", "max (ns)", "top source"],
                         [[r["node"], r["rank"], r["noise_ppm"], r["detours"], r["p99_ns"], r["max_ns"],
                           r["top_source"] or "-"] for r in s["nodes"]]),
                  "<h2>Sources by nodes hit</h2>",
                  _table(["source", "nodes", "mean (ppm)", "worst node", "worst (ppm)"],
                         [[f"{x['kind']}:{x['name']}", x["nodes"], x["mean_ppm"], x["max_node"], x["max_ppm"]]
                          for x in s["sources"][:30]]),
                  "<h2>Outlier nodes</h2>",
                  _table(["node", "source", "ppm", "typical (ppm)", "robust z"],
                         [[o["node"], x["source"], x["ppm"], x["typical_ppm"], x["z"]]
                          for o in s["outliers"] for x in o["sources"]]) if s["outliers"]
                  else "<p>none</p>",
                  f"<p>Method: {html.escape(s['outlier_method']['name'])}, cutoff {s['outlier_method']['cutoff']}.</p>",
                  "<h2>Node x source</h2>", svg]
    parts.append("</body></html>")
    return "\n".join(parts)


# -- the report pipeline (report/__init__.py: data -> figures -> page, then it writes them) --------
def build_report_data(run: Run) -> dict[str, Any]:
    """What the cluster page shows; a bsp run has no node x source heatmap."""
    crun = ClusterRun(run.path, run.meta, run.summary)
    heat = heatmap_data(crun) if "measured" not in crun.summary else {"nodes": [], "sources": [], "ppm": []}
    return {"run": crun, "heatmap": heat}


def build_figures(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Figure id -> (caption, SVG): the heatmap, when there is one (written as <stem>-heatmap.svg)."""
    svg = heatmap_svg(data["heatmap"])
    return {"heatmap": ("noise per node and source", svg)} if svg else {}


def render_page(data: dict[str, Any], figs: dict[str, tuple[str, str]]) -> str:
    return render_html(data["run"], data["heatmap"], figs["heatmap"][1] if "heatmap" in figs else "")


# -- compare ---------------------------------------------------------------------------------
def compare_clusters(base_dir: Path, new_dir: Path) -> dict[str, Any]:
    """Per node (same host and CPU) noise before and after; sources by nodes hit before and after."""
    base, new = load_cluster(base_dir), load_cluster(new_dir)
    if "measured" in base.summary or "measured" in new.summary:
        raise JitterscopeError("compare reads cluster measure runs; for cluster bsp runs compare their summary.json")
    b = {r["node"]: r for r in base.summary["nodes"]}
    n = {r["node"]: r for r in new.summary["nodes"]}
    nodes = []
    for key in sorted(set(b) & set(n)):
        bp, np_ = b[key]["noise_ppm"], n[key]["noise_ppm"]
        nodes.append({"node": key, "base_ppm": bp, "new_ppm": np_, "delta_ppm": round(np_ - bp, 3),
                      "ratio": round(np_ / bp, 4) if bp > 0 else None})
    nodes.sort(key=lambda x: -x["delta_ppm"])
    bs = {(s["kind"], s["name"]): s for s in base.summary["sources"]}
    ns = {(s["kind"], s["name"]): s for s in new.summary["sources"]}
    sources = [{"kind": k, "name": nm, "base_nodes": bs.get((k, nm), {}).get("nodes", 0),
                "new_nodes": ns.get((k, nm), {}).get("nodes", 0),
                "base_mean_ppm": bs.get((k, nm), {}).get("mean_ppm", 0.0),
                "new_mean_ppm": ns.get((k, nm), {}).get("mean_ppm", 0.0)} for k, nm in sorted(set(bs) | set(ns))]
    sources.sort(key=lambda x: -(x["new_nodes"] * x["new_mean_ppm"] - x["base_nodes"] * x["base_mean_ppm"]))
    return {"kind": "cluster", "runs": {"base": str(base_dir), "new": str(new_dir)}, "nodes": nodes,
            "only_in_base": sorted(set(b) - set(n)), "only_in_new": sorted(set(n) - set(b)),
            "sources": sources,
            "outliers": {"base": [o["node"] for o in base.summary["outliers"]],
                         "new": [o["node"] for o in new.summary["outliers"]]},
            "median_ppm": {"base": base.summary["noise_ppm"]["median"], "new": new.summary["noise_ppm"]["median"]}}


def render_compare(c: dict[str, Any]) -> str:
    lines = [f"cluster compare: {c['runs']['base']} -> {c['runs']['new']}",
             f"median noise per node: {c['median_ppm']['base']:,.0f} -> {c['median_ppm']['new']:,.0f} ppm", "",
             f"{'node':<28} {'base ppm':>12} {'new ppm':>12} {'ratio':>8}"]
    for x in c["nodes"][:20]:
        ratio = f"{x['ratio']:.2f}" if x["ratio"] is not None else "-"
        lines.append(f"{x['node']:<28} {x['base_ppm']:>12,.0f} {x['new_ppm']:>12,.0f} {ratio:>8}")
    for w in ("only_in_base", "only_in_new"):
        if c[w]:
            lines.append(f"{w.replace('_', ' ')}: {', '.join(c[w][:10])}")
    lines += ["", "sources (nodes hit, mean ppm) base -> new:"]
    for s in c["sources"][:10]:
        lines.append(f"  {s['kind'] + ':' + s['name']:<40} {s['base_nodes']:>4} -> {s['new_nodes']:<4} "
                     f"{s['base_mean_ppm']:>10,.1f} -> {s['new_mean_ppm']:,.1f}")
    lines.append(f"outliers: {', '.join(c['outliers']['base']) or 'none'} -> {', '.join(c['outliers']['new']) or 'none'}")
    return "\n".join(lines)
