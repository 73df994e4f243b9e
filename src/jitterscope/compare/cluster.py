"""Compare two cluster runs: per node (same host and CPU) noise before and after, and the
sources by nodes hit before and after.  Data (`compare_clusters`), then text (`render_compare`)."""

from __future__ import annotations

from typing import TypedDict

from jitterscope.compare.diff import Thresholds
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import Run


class NodeChange(TypedDict):
    node: str
    base_ppm: float
    new_ppm: float
    delta_ppm: float
    ratio: float | None


class SourceNodes(TypedDict):
    """A source's reach: how many nodes it hit and its mean noise there, before and after."""

    kind: str
    name: str
    base_nodes: int
    new_nodes: int
    base_mean_ppm: float
    new_mean_ppm: float


class ClusterComparison(TypedDict):
    kind: str
    runs: dict[str, str]  # base, new: their directories
    nodes: list[NodeChange]
    only_in_base: list[str]
    only_in_new: list[str]
    sources: list[SourceNodes]
    outliers: dict[str, list[str]]  # base, new: the outlier nodes
    median_ppm: dict[str, float]  # base, new


def compare_clusters(base: Run, new: Run, th: Thresholds | None = None) -> ClusterComparison:
    """`th` is accepted for a uniform signature: nodes are compared by their noise, not tested."""
    if "measured" in base.summary or "measured" in new.summary:
        raise JitterscopeError("compare reads cluster measure runs; for cluster bsp runs compare their summary.json")
    b = {r["node"]: r for r in base.summary["nodes"]}
    n = {r["node"]: r for r in new.summary["nodes"]}
    nodes: list[NodeChange] = []
    for key in sorted(set(b) & set(n)):
        bp, np_ = b[key]["noise_ppm"], n[key]["noise_ppm"]
        nodes.append(
            {
                "node": key,
                "base_ppm": bp,
                "new_ppm": np_,
                "delta_ppm": round(np_ - bp, 3),
                "ratio": round(np_ / bp, 4) if bp > 0 else None,
            }
        )
    nodes.sort(key=lambda x: -x["delta_ppm"])
    bs = {(s["kind"], s["name"]): s for s in base.summary["sources"]}
    ns = {(s["kind"], s["name"]): s for s in new.summary["sources"]}
    sources: list[SourceNodes] = [
        {
            "kind": k,
            "name": nm,
            "base_nodes": bs.get((k, nm), {}).get("nodes", 0),
            "new_nodes": ns.get((k, nm), {}).get("nodes", 0),
            "base_mean_ppm": bs.get((k, nm), {}).get("mean_ppm", 0.0),
            "new_mean_ppm": ns.get((k, nm), {}).get("mean_ppm", 0.0),
        }
        for k, nm in sorted(set(bs) | set(ns))
    ]
    sources.sort(key=lambda x: -(x["new_nodes"] * x["new_mean_ppm"] - x["base_nodes"] * x["base_mean_ppm"]))
    return {
        "kind": "cluster",
        "runs": {"base": str(base.path), "new": str(new.path)},
        "nodes": nodes,
        "only_in_base": sorted(set(b) - set(n)),
        "only_in_new": sorted(set(n) - set(b)),
        "sources": sources,
        "outliers": {
            "base": [o["node"] for o in base.summary["outliers"]],
            "new": [o["node"] for o in new.summary["outliers"]],
        },
        "median_ppm": {"base": base.summary["noise_ppm"]["median"], "new": new.summary["noise_ppm"]["median"]},
    }


def render_compare(c: ClusterComparison) -> str:
    lines = [
        f"cluster compare: {c['runs']['base']} -> {c['runs']['new']}",
        f"median noise per node: {c['median_ppm']['base']:,.0f} -> {c['median_ppm']['new']:,.0f} ppm",
        "",
        f"{'node':<28} {'base ppm':>12} {'new ppm':>12} {'ratio':>8}",
    ]
    for x in c["nodes"][:20]:
        ratio = f"{x['ratio']:.2f}" if x["ratio"] is not None else "-"
        lines.append(f"{x['node']:<28} {x['base_ppm']:>12,.0f} {x['new_ppm']:>12,.0f} {ratio:>8}")
    for w in ("only_in_base", "only_in_new"):
        if c[w]:
            lines.append(f"{w.replace('_', ' ')}: {', '.join(c[w][:10])}")
    lines += ["", "sources (nodes hit, mean ppm) base -> new:"]
    for s in c["sources"][:10]:
        lines.append(
            f"  {s['kind'] + ':' + s['name']:<40} {s['base_nodes']:>4} -> {s['new_nodes']:<4} "
            f"{s['base_mean_ppm']:>10,.1f} -> {s['new_mean_ppm']:,.1f}"
        )
    base, new = ", ".join(c["outliers"]["base"]) or "none", ", ".join(c["outliers"]["new"]) or "none"
    lines.append(f"outliers: {base} -> {new}")
    return "\n".join(lines)
