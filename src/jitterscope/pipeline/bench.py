"""`pipeline bench`: every heuristic x allocator, in the thesis's table layout (the thesis section 3.5-3.6).

One graph: each configuration compiled and run (a run directory each, under
the bench directory), then one row per configuration: mean, sigma, max,
p50, p99, p99.9 of the per-iteration latency (Tables 3.1/3.2's layout), and
box plots of the configurations.  A synthetic set (`--synthetic K`): every
configuration on the first chain (the table), and the reduced heuristic with
reuse on every chain, box plots sorted by median (figure 3.8).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from jitterscope import plotting
from jitterscope.atomic import write_text
from jitterscope.pipeline import heuristics as H
from jitterscope.pipeline.compiler import Options, compile_graph
from jitterscope.pipeline.graph import Graph
from jitterscope.pipeline.memory import ALLOCATORS
from jitterscope.pipeline.plan import RunOptions
from jitterscope.pipeline.plots import boxplots
from jitterscope.pipeline.results import BenchResult, BenchRow, SigmaOrder
from jitterscope.pipeline.run import run_pipeline
from jitterscope.pipeline.stats import latency_stats
from jitterscope.rundir import load_run

FIG38 = ("reduced", "reuse")


def configurations(heuristics: list[str] | None = None, memories: list[str] | None = None) -> list[tuple[str, str]]:
    return [(h, m) for h in (heuristics or list(H.HEURISTICS)) for m in (memories or list(ALLOCATORS))]


def run_config(
    g: Graph,
    heuristic: str,
    memory: str,
    opts: Options,
    ro: RunOptions,
    out: Path,
    progress: bool,
    trace: bool = False,
    suffix: str = "",
) -> BenchRow:
    sched = compile_graph(g, replace(opts, heuristic=heuristic, memory=memory))
    d = run_pipeline(sched, ro, out / f"{g.name}-{heuristic}-{memory}{suffix}", trace=trace, progress=progress)
    run = load_run(d, kinds=("pipeline",))
    if run.summary["run"].get("interrupted"):
        raise KeyboardInterrupt  # Ctrl-C ended this run (kept in its directory): end the bench too
    lat = run.table("iterations").column("latency_ns").to_numpy()
    late = run.summary.get("late") or {}
    top = next((x for x in late.get("sources", []) if x["excess_ns"] > 0), None)
    return {
        "graph": g.name,
        "heuristic": heuristic,
        "memory": memory,
        "threads": len(sched.threads),
        "pool_bytes": sched.memory.total,
        "signals": len(sched.signals),
        "run": str(d),
        "latency": run.summary["latency"],
        "digest": run.summary["outputs"]["digest"],
        "_lat": lat,
        "late_top": None
        if top is None
        else {"kind": top["kind"], "name": top["name"], "late_ns": top["late_ns"], "typical_ns": top["typical_ns"]},
    }


def bench(
    graphs: list[Graph],
    configs: list[tuple[str, str]],
    opts: Options,
    ro: RunOptions,
    out: Path,
    progress: bool = False,
    on_row: Any = None,
    trace: bool = False,
    rounds: int = 1,
) -> BenchResult:
    """Run the table on graphs[0] and, when there are more graphs, reduced+reuse on every graph.
    With `trace`, each configuration's late iterations are attributed (the table's "why").  With
    `rounds` > 1 the configurations take turns, each round running ro.iterations / rounds of each, so a
    shared machine's changing load falls on all of them alike (compared side by side in one run)."""
    rows = _interleaved(graphs[0], configs, opts, ro, out, progress, trace, rounds, on_row)
    chains = []
    if len(graphs) > 1:
        first = next((r for r in rows if (r["heuristic"], r["memory"]) == FIG38), None)
        for i, g in enumerate(graphs):
            r = first if i == 0 and first else run_config(g, *FIG38, opts, ro, out, progress)
            chains.append(r)
            if on_row and r is not first:
                on_row(r)
    digests = {r["digest"] for r in rows}
    result: BenchResult = {
        "graph": graphs[0].name,
        "threads": opts.threads,
        "iterations": ro.iterations,
        "cpus": list(ro.cpus),
        "rows": rows,
        "chains": chains,
        "outputs_identical": len(digests) == 1,
        "order_of_sigma": sigma_order(rows),
    }
    _write(result, out)
    return result


def _interleaved(
    g: Graph,
    configs: list[tuple[str, str]],
    opts: Options,
    ro: RunOptions,
    out: Path,
    progress: bool,
    trace: bool,
    rounds: int,
    on_row: Any,
) -> list[BenchRow]:
    if rounds <= 1:
        rows = []
        for h, m in configs:
            rows.append(run_config(g, h, m, opts, ro, out, progress, trace))
            if on_row:
                on_row(rows[-1])
        return rows
    per = replace(ro, iterations=max(1, ro.iterations // rounds))
    parts: dict[tuple[str, str], list[BenchRow]] = {c: [] for c in configs}
    for r in range(rounds):
        for h, m in configs:
            parts[(h, m)].append(run_config(g, h, m, opts, per, out, progress, trace, f"-r{r}"))
    rows = []
    for c in configs:
        first = parts[c][0]
        lat = np.concatenate([p["_lat"] for p in parts[c]])
        rows.append(
            {
                **first,
                "run": [str(p["run"]) for p in parts[c]],
                "_lat": lat,
                "latency": latency_stats(lat),
                "digest": first["digest"] if len({p["digest"] for p in parts[c]}) == 1 else "differs",
            }
        )
        if on_row:
            on_row(rows[-1])
    return rows


def sigma_order(rows: list[BenchRow]) -> SigmaOrder:
    """The thesis's expected ordering: sigma(simple) >> sigma(barrier) >= fixed ~ predictable ~ reduced."""
    by: dict[str, list[float]] = {}
    for r in rows:
        by.setdefault(r["heuristic"], []).append(float(r["latency"]["sd"] or 0.0))
    sd = {h: float(np.mean(v)) for h, v in by.items()}
    checks = {}
    if "simple" in sd and "barrier" in sd:
        checks["simple > barrier"] = sd["simple"] > sd["barrier"]
    pinned = [sd[h] for h in H.PINNED if h in sd]
    if "barrier" in sd and pinned:
        checks["barrier >= pinned heuristics (mean)"] = sd["barrier"] >= float(np.mean(pinned))
    return {"sigma_by_heuristic_ns": sd, "checks": checks, "holds": all(checks.values()) if checks else None}


def _write(result: BenchResult, out: Path) -> None:
    clean = {
        **result,
        "rows": [{k: v for k, v in r.items() if k != "_lat"} for r in result["rows"]],
        "chains": [{k: v for k, v in r.items() if k != "_lat"} for r in result["chains"]],
    }
    write_text(out / "bench.json", json.dumps(clean, indent=2) + "\n")


def figures(result: BenchResult, out: Path) -> list[Path]:
    paths = [
        plotting.save(
            boxplots(
                [(f"{r['heuristic']}\n{r['memory']}", r["_lat"]) for r in result["rows"]],
                f"{result['graph']}: latency per configuration ({result['threads']} threads)",
            ),
            out / "configurations.svg",
        )
    ]
    if result["chains"]:
        paths.append(
            plotting.save(
                boxplots(
                    [(r["graph"], r["_lat"]) for r in result["chains"]],
                    "reduced + reuse on every synthetic chain, sorted by median (thesis figure 3.8)",
                    sort_by_median=True,
                ),
                out / "chains.svg",
            )
        )
    return paths
