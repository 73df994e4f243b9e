"""The cluster summary: noise per node, the noisiest nodes, widespread sources, outliers.

Input is one single-machine summary.json per node (each rank measured one CPU);
output is plain data for summary.json of the cluster run (see docs/commands/cluster.md).
A node is (host, CPU): several ranks on one host measuring distinct CPUs are
several nodes.
"""

from __future__ import annotations

import re
from typing import Any, TypedDict

import numpy as np

from jitterscope.cluster import outliers as outl
from jitterscope.measure.summary import CpuRow

NOISIEST = 5

# Per-CPU kernel threads carry their CPU in the name (kworker/1:2, ksoftirqd/3,
# js-probe/1); across nodes on different CPUs they are the same source.
_PER_CPU_THREAD = re.compile(r"/(u?)\d+(:\d+H?)?$")


def node_key(host: str, cpu: int) -> str:
    return f"{host}:{cpu}"


def source_key(kind: str, name: str) -> str:
    if kind == "thread":
        name = _PER_CPU_THREAD.sub(lambda m: "/" + m.group(1) + "*" + (":*" if m.group(2) else ""), name)
    return f"{kind}:{name}"


class NodeRow(CpuRow):
    """One node's line of the cluster table: its CPU's row of its own summary, and where it ran."""

    node: str
    host: str
    cpu: int
    rank: int
    duration_s: float
    tracing: bool
    lost_events: int
    top_source: str | None


class NoiseSpread(TypedDict):
    median: float
    max: float
    min: float


class OutlierMethod(TypedDict):
    name: str
    cutoff: float
    scale_floor_ppm: float
    note: str | None


class Summary(TypedDict):
    """summary.json of a `cluster measure` run (docs/run-format.md, "cluster runs")."""

    run: dict[str, Any]  # the run's header as cluster/measure.py states it, with nodes and hosts counted
    nodes: list[NodeRow]  # noisiest first
    noisiest: list[str]
    noise_ppm: NoiseSpread
    sources: list[WidespreadSource]
    outliers: list[outl.Outlier]
    outlier_method: OutlierMethod
    lost_events: int


def node_row(node: dict[str, Any]) -> NodeRow:
    """One node's line of the cluster table from its own summary."""
    s = node["summary"]
    cpu = str(node["cpu"])
    c = s.get("cpus", {}).get(cpu, {})
    top = next((f"{x['kind']}:{x['name']}" for x in s.get("sources", [])), None)
    return {
        "node": node_key(node["host"], node["cpu"]),
        "host": node["host"],
        "cpu": int(node["cpu"]),
        "rank": int(node["rank"]),
        "duration_s": float(s["run"]["duration_s"]),
        "noise_ns": int(c.get("noise_ns", 0)),
        "noise_ppm": float(c.get("noise_ppm", 0.0)),
        "detours": int(c.get("detours", 0)),
        "p99_ns": float(c.get("p99_ns", 0.0)),
        "max_ns": int(c.get("max_ns", 0)),
        "resolution_ns": float(c.get("resolution_ns", 0.0)),
        "tracing": bool(s["run"].get("tracing")),
        "lost_events": int(s.get("lost_events", 0)),
        "top_source": top,
    }


def source_matrix(nodes: list[dict[str, Any]]) -> tuple[list[str], np.ndarray]:
    """Features (kind:name, unexplained included) and the nodes x features ppm matrix."""
    per_node: list[dict[str, float]] = []
    for node in nodes:
        s = node["summary"]
        measured_ns = float(s["run"]["duration_s"]) * 1e9
        row: dict[str, float] = {}
        for src in s.get("sources", []):
            key = source_key(src["kind"], src["name"])
            row[key] = row.get(key, 0.0) + float(src["total_ns"])
        un = s.get("unexplained", {})
        if un.get("total_ns"):
            row["unexplained:unexplained"] = float(un["total_ns"])
        per_node.append({k: v / measured_ns * 1e6 if measured_ns > 0 else 0.0 for k, v in row.items()})
    features = sorted({k for r in per_node for k in r})
    m = np.zeros((len(nodes), len(features)))
    index = {f: j for j, f in enumerate(features)}
    for i, r in enumerate(per_node):
        for k, v in r.items():
            m[i, index[k]] = v
    return features, m


class WidespreadSource(TypedDict):
    kind: str
    name: str
    nodes: int  # nodes it took time on
    node_share: float  # of all nodes
    mean_ppm: float  # over the nodes it hit
    max_ppm: float
    max_node: str
    total_ppm: float


def widespread_sources(names: list[str], features: list[str], ppm: np.ndarray) -> list[WidespreadSource]:
    """Sources by how many nodes they hit (then by their total), with where they hit hardest."""
    out: list[WidespreadSource] = []
    for j, f in enumerate(features):
        col = ppm[:, j]
        hit = col > 0
        if not hit.any():
            continue
        kind, name = f.split(":", 1)
        worst = int(np.argmax(col))
        out.append(
            {
                "kind": kind,
                "name": name,
                "nodes": int(hit.sum()),
                "node_share": round(float(hit.mean()), 4),
                "mean_ppm": round(float(col[hit].mean()), 3),
                "max_ppm": round(float(col[worst]), 3),
                "max_node": names[worst],
                "total_ppm": round(float(col.sum()), 3),
            }
        )
    out.sort(key=lambda s: (-s["nodes"], -s["total_ppm"]))
    return out


def build_summary(run_info: dict[str, Any], nodes: list[dict[str, Any]]) -> Summary:
    """nodes: [{host, cpu, rank, summary}] — one per rank, in rank order."""
    rows = [node_row(n) for n in nodes]
    names = [r["node"] for r in rows]
    features, ppm = source_matrix(nodes)
    total = np.array([r["noise_ppm"] for r in rows], dtype=float)
    ranked = sorted(rows, key=lambda r: -r["noise_ppm"])
    outliers = outl.find_outliers(names, features, ppm, total)
    note = None if len(rows) >= outl.MIN_NODES else f"outliers need at least {outl.MIN_NODES} nodes"
    return {
        "run": {**run_info, "nodes": len(rows), "hosts": len({r["host"] for r in rows})},
        "nodes": ranked,
        "noisiest": [r["node"] for r in ranked[:NOISIEST]],
        "noise_ppm": {
            "median": round(float(np.median(total)), 3) if len(total) else 0.0,
            "max": round(float(total.max()), 3) if len(total) else 0.0,
            "min": round(float(total.min()), 3) if len(total) else 0.0,
        },
        "sources": widespread_sources(names, features, ppm),
        "outliers": outliers,
        "outlier_method": {
            "name": "leave-one-out modified z-score (Iglewicz & Hoaglin 1993) of each source's ppm per node",
            "cutoff": outl.CUTOFF,
            "scale_floor_ppm": round(outl.scale_floor(total), 3),
            "note": note,
        },
        "lost_events": int(sum(r["lost_events"] for r in rows)),
    }
