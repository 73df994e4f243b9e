"""The HTML page of a place run (report/templates/place.html.j2): per-task throughput, noise and weight,
and the paper's figure 3: a timeline of which task ran where, shaded by its weight, with every migration."""

from __future__ import annotations

from typing import Any, TypedDict

from jitterscope import plotting
from jitterscope.place.results import TopologyInfo, read_summary
from jitterscope.report.page import Column, Figure, render_page
from jitterscope.rundir import Run


class PageData(TypedDict):
    """What place.html.j2 reads as `data`."""

    headline: str
    sources: str  # where the weights came from
    pmu: str
    topology: TopologyInfo
    tasks: list[list[Any]]  # TASK_COLUMNS' cells
    decisions: list[list[Any]]  # DECISION_COLUMNS' cells


TASK_COLUMNS = [
    Column("task"),
    Column("pid", "int"),
    Column("CPU", "int"),
    Column("weight", "{:.3g}"),
    Column("source"),
    Column("throughput (ops/s)", "{:,.1f}"),
    Column("on CPU", "ns"),
    Column("run-queue wait", "ns"),
    Column("involuntary switches", "int"),
    Column("faults", "int"),
    Column("end"),
]
DECISION_COLUMNS = [
    Column("time", "ns"),
    Column("policy"),
    Column("action"),
    Column("task"),
    Column("CPU", "int"),
    Column("reason"),
]


def _timeline(run: Run) -> Figure:
    obs = run.table("observations").to_pylist()
    moves = [d for d in run.table("decisions").to_pylist() if d["action"] in ("migrate", "pin", "release", "place")]
    plt = plotting.pyplot()
    pids = sorted({r["pid"] for r in obs})
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.35 * max(1, len(pids))))
    wmax = max([r["weight"] for r in obs] + [1e-12])
    cmap = plt.get_cmap("viridis_r")
    for r in obs:
        y = pids.index(r["pid"])
        ax.broken_barh(
            [(r["start_ns"] / 1e9, (r["end_ns"] - r["start_ns"]) / 1e9)],
            (y - 0.4, 0.8),
            facecolors=cmap(0.15 + 0.85 * r["weight"] / wmax),
            edgecolor="none",
        )
        ax.text(
            (r["start_ns"] + r["end_ns"]) / 2e9, y, str(r["cpu"]), ha="center", va="center", fontsize=6, color="white"
        )
    for d in moves:
        if d["pid"] in pids:
            ax.plot(d["t_ns"] / 1e9, pids.index(d["pid"]), marker="v", color="red", markersize=5)
    names = {r["pid"]: r["name"] for r in obs}
    ax.set_yticks(range(len(pids)), [f"{names[p]} [{p}]" for p in pids], fontsize=7)
    ax.set_xlabel("time (s)")
    ax.set_title("which task ran where (digit: CPU; darker: heavier; red: placement decisions)", fontsize=9)
    fig.tight_layout()  # room for the task names and the axis label (they were cut off)
    return Figure(
        "timeline",
        "Timeline of every task's quanta: the CPU it ran on and its cache weight (the paper's figure 3)",
        plotting.svg_text(fig),
    )


def build_page(run: Run) -> tuple[str, list[Figure]]:
    s = read_summary(run)
    r = s["run"]
    rows = [
        [
            t["name"],
            t["pid"],
            t["home"],
            t["mean_weight"],
            t["weight_source"],
            t["ops_per_s"],
            t["run_ns"],
            t["wait_ns"],
            t["ivcsw"],
            t["faults"],
            t["end"],
        ]
        for t in s["tasks"]
    ]
    dec = [
        [d["t_ns"], d["policy"], d["action"], f"{d['name']} [{d['pid']}]", d["cpu"], d["reason"]]
        for d in run.table("decisions").to_pylist()
        if d["action"] != "run"
    ][:500]
    data: PageData = {
        "headline": f"policies {','.join(r['policies'])}, quantum {r['quantum_ns'] / 1e6:g} ms, "
        f"{r['wall_ns'] / 1e9:.2f} s ({r['ended_by']}); heavy tasks co-running "
        f"{s['coheavy_fraction']:.1%} of their time ({s['coheavy_method']})",
        "sources": ", ".join(f"{k} x{v}" for k, v in s["weight_sources"].items()) or "none",
        "pmu": r["pmu"]["why"],
        "topology": r["topology"],
        "tasks": rows,
        "decisions": dec,
    }
    figs = [_timeline(run)]
    warnings = [] if r["pmu"]["available"] else [f"Weights are stand-ins ({data['sources']}): {r['pmu']['why']}"]
    html = render_page(
        "place.html.j2",
        title=f"jitterscope place: {run.meta.get('host', '')}",
        data=data,
        figures=figs,
        nav=[("tasks", "Tasks"), ("timeline", "Timeline"), ("decisions", "Decisions")],
        warnings=warnings,
        task_columns=TASK_COLUMNS,
        decision_columns=DECISION_COLUMNS,
    )
    return html, figs
