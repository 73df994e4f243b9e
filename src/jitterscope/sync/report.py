"""The HTML page of a sync run (report/templates/sync.html.j2): data first (summary.json and the
tables), then figures (sync/plots.py)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from jitterscope import plotting
from jitterscope.report.page import Column, Figure, render_page
from jitterscope.rundir import Run
from jitterscope.sync.plots import timeline, type_distributions
from jitterscope.sync.render import TYPE_LABELS, causes_text, notes

NS = "ns"
LABELS = {**TYPE_LABELS, "hd": "holder-delay", "ns": "non-sync"}


def _overview(s: dict[str, Any]) -> list[list[Any]]:
    cp, run_ns = s["critical_path"], max(s["run_ns"], 1)
    rows = [
        ["run time", s["run_ns"], None],
        ["synchronisation jitter (all threads)", s["sync_jitter_ns"], s["sync_jitter_ns"] / run_ns],
        ["critical path: max-on-join counters", cp["counter_jitter_ns"], cp["share"]],
        ["critical path: on the happens-before path", cp["path_jitter_ns"], cp["path_jitter_ns"] / run_ns],
    ]
    if s["run"]["tracing"]:
        rows += [
            ["non-synchronisation jitter", s["non_sync_jitter_ns"], (s["non_sync_jitter_ns"] or 0) / run_ns],
            ["holder delay", s["holder_delay_ns"], (s["holder_delay_ns"] or 0) / run_ns],
        ]
    return rows


def page_data(run: Run) -> dict[str, Any]:
    s, m = run.summary, run.meta
    r = s["run"]
    headline = (
        f"{' '.join(r['command'])}: exit code {r['exit_code']}, {s['processes']} process(es), "
        f"{s['threads']} threads, {s['waits']} contended waits; N = {r['threshold_ns']:,} ns ({r['mode']} "
        f"mode); CPUs {', '.join(map(str, r['cpus']))}; started {r['start']}"
    )
    tables = [
        {
            "id": "overview",
            "title": "Overview",
            "figures": ["timeline"],
            "columns": [Column("what"), Column("time", NS), Column("share of run time", "pct")],
            "rows": _overview(s),
            "note": "jitter of an interval T above N: T - N (excess) or T (whole); shares of the run time can pass "
            "100% with several threads",
        },
        {
            "id": "types",
            "title": "By type",
            "figures": ["types"],
            "columns": [
                Column("type"),
                Column("intervals", "int"),
                Column("jitter events", "int"),
                Column("jitter", NS),
                Column("share of sync jitter", "pct"),
                Column("median T", NS),
                Column("p99 T", NS),
                Column("max T", NS),
                Column("causes"),
            ],
            "rows": [
                [
                    f"{t} {LABELS.get(t, '')}",
                    d["intervals"],
                    d["count"],
                    d["jitter_ns"],
                    d["share"] if t in TYPE_LABELS else None,
                    d["t"]["p50_ns"],
                    d["t"]["p99_ns"],
                    d["t"]["max_ns"],
                    causes_text(d["causes"]),
                ]
                for t, d in s["types"].items()
                if d["intervals"] or d["count"]
            ],
        },
        {
            "id": "objects",
            "title": "Top objects",
            "columns": [
                Column("kind"),
                Column("object"),
                Column("call site"),
                Column("events", "int"),
                Column("jitter", NS),
                Column("by type"),
                Column("causes"),
            ],
            "rows": [
                [
                    o["kind"],
                    o["symbol"] or o["obj"],
                    o["site"],
                    o["count"],
                    o["jitter_ns"],
                    ", ".join(f"{k} {v:,} ns" for k, v in o["types"].items()),
                    causes_text(o["causes"]),
                ]
                for o in s["objects"]
            ],
            "empty": "no object had jitter",
        },
        {
            "id": "causes",
            "title": "Causes of synchronisation jitter",
            "columns": [Column("side"), Column("kind"), Column("name"), Column("time", NS), Column("share", "pct")],
            "rows": [[c["side"], c["kind"], c["name"], c["ns"], c["share"]] for c in s["causes"]],
            "empty": "no causes: " + ("none of the jitter was traced" if r["tracing"] else "kernel tracing was off"),
            "note": "waiter: what ran on the waiter's CPU between the release and its return; caller: during a "
            "signal/unlock/broadcast call; holder: the time the releaser lost while others waited for it",
        },
        {
            "id": "threads",
            "title": "Threads",
            "columns": [
                Column("tid", "int"),
                Column("name"),
                Column("created by", "int"),
                Column("start", NS),
                Column("end", NS),
                Column("joined by", "int"),
                Column("jitter", NS),
                Column("critical-path counter", NS),
            ],
            "rows": _threads(run),
        },
    ]
    fr = s["frames"]
    if fr["count"]:
        tables.append(
            {
                "id": "frames",
                "title": "Frames",
                "figures": ["frames"],
                "columns": [
                    Column("frames", "int"),
                    Column("median time", NS),
                    Column("p99 time", NS),
                    Column("max time", NS),
                    Column("median jitter", NS),
                    Column("max jitter", NS),
                ],
                "rows": [
                    [
                        fr["count"],
                        fr["time"]["p50_ns"],
                        fr["time"]["p99_ns"],
                        fr["time"]["max_ns"],
                        fr["jitter"]["p50_ns"],
                        fr["jitter"]["max_ns"],
                    ]
                ],
            }
        )
    sf = s.get("subframes")
    if sf and sf["count"]:
        tables.append(
            {
                "id": "subframes",
                "title": "Subframes",
                "columns": [
                    Column("length", NS),
                    Column("subframes", "int"),
                    Column("measured", "int"),
                    Column("with jitter", "int"),
                    Column("ended at create/join", "int"),
                    Column("p50 jitter", NS),
                    Column("p99 jitter", NS),
                    Column("max jitter", NS),
                ],
                "rows": [
                    [
                        sf["length_ns"],
                        sf["count"],
                        sf["measured"],
                        sf["with_jitter"],
                        sf["forced"],
                        sf["jitter_p50_ns"],
                        sf["jitter_p99_ns"],
                        sf["jitter_max_ns"],
                    ]
                ],
                "note": f"per thread, restarted at each create and join; the first {sf['warmup']} of each "
                f"thread are the warm-up (not measured); subframes.parquet has every one",
            }
        )
    return {"id": m.get("id"), "headline": headline, "tables": tables, "notes": notes(s)}


def _threads(run: Run) -> list[list[Any]]:
    per: dict[int, int] = defaultdict(int)
    for r in run.table("jitter").to_pylist():
        per[r["tid"]] += r["jitter_ns"] if r["type"] != "hd" else 0
    counters = run.summary["critical_path"].get("per_thread", {})
    return [
        [
            t["tid"],
            t["name"],
            t["creator_tid"] or None,
            t["start_ns"],
            t["end_ns"],
            t["joined_by"] or None,
            per.get(t["tid"], 0),
            counters.get(str(t["tid"])),
        ]
        for t in run.table("threads").to_pylist()
    ]


def figures(run: Run) -> list[Figure]:

    s = run.summary
    jitter = [r for r in run.table("jitter").to_pylist() if r["jitter_ns"] > 0]
    top: dict[int, tuple[int, str]] = {}
    for c in run.table("causes").to_pylist():
        if c["jitter"] not in top or c["ns"] > top[c["jitter"]][0]:
            top[c["jitter"]] = (c["ns"], c["kind"] if c["kind"] in ("self", "idle") else f"{c['kind']}:{c['name']}")
    lanes = [(t["tid"], f"{t['name'] or 'thread'} {t['tid']}") for t in run.table("threads").to_pylist()]
    figs = [
        Figure(
            "timeline",
            "Waits (grey) per thread; jitter by type (upper half); time lost by its top cause (lower half)",
            plotting.svg_text(
                timeline(
                    lanes,
                    run.table("waits").to_pylist(),
                    jitter,
                    {k: v[1] for k, v in top.items()},
                    "waits and jitter per thread",
                )
            ),
        )
    ]
    rows = run.table("jitter").to_pylist()
    groups = [(t, np.array([r["t_ns"] for r in rows if r["type"] == t], np.int64)) for t in s["types"]]
    groups = [g for g in groups if len(g[1])]
    if groups:
        figs.append(
            Figure(
                "types",
                "Distribution of T per type (every interval, jitter or not)",
                plotting.svg_text(type_distributions(groups, s["run"]["threshold_ns"], "T per type")),
            )
        )
    frames = run.table("frames").to_pylist()
    if len(frames) > 1:
        ft = np.array([f["end_ns"] - f["start_ns"] for f in frames], np.int64)
        figs.append(
            Figure(
                "frames",
                "Frame time distribution",
                plotting.svg_text(type_distributions([("frame time", ft)], s["run"]["threshold_ns"], "frame time")),
            )
        )
    return figs


def build_page(run: Run) -> tuple[str, list[Figure]]:
    data = page_data(run)
    figs = figures(run)
    nav = [(t["id"], t["title"]) for t in data["tables"]]
    html = render_page(
        "sync.html.j2",
        title=f"jitterscope sync: {' '.join(run.summary['run']['command'])[:80]}",
        data=data,
        figures=figs,
        nav=nav,
        warnings=data["notes"],
    )
    return html, figs
