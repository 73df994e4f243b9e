"""The HTML page of a sync run (report/templates/sync.html.j2): data first (summary.json and the
tables), then figures (sync/plots.py)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pyarrow.compute as pc

from jitterscope import plotting
from jitterscope.report.page import Column, Figure, PageData, PageTable, Planned, draw_figures, render_page
from jitterscope.rundir import Run
from jitterscope.sync.plots import timeline, type_distributions
from jitterscope.sync.render import TYPE_LABELS, causes_text, notes
from jitterscope.sync.summary import Summary, read

NS = "ns"
LABELS = {**TYPE_LABELS, "hd": "holder-delay", "ns": "non-sync"}


def _overview(s: Summary) -> list[list[Any]]:
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
    oh = s.get("overhead")
    if oh:  # the report's own time is not known yet when it is drawn
        rows += [
            ["jitterscope start-up (before CMD)", round(oh["startup_s"] * 1e9), None],
            ["jitterscope analysis (after CMD)", round(oh["analysis_s"] * 1e9), None],
        ]
    return rows


def page_data(run: Run) -> PageData:
    s, m = read(run), run.meta
    r = s["run"]
    headline = (
        f"{' '.join(r['command'])}: exit code {r['exit_code']}, {s['processes']} process(es), "
        f"{s['threads']} threads, {s['waits']} contended waits; N = {r['threshold_ns']:,} ns ({r['mode']} "
        f"mode); CPUs {', '.join(map(str, r['cpus']))}; started {r['start']}"
    )
    tables: list[PageTable] = [
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
    jitter = run.table("jitter")
    own = ~np.asarray(pc.equal(jitter.column("type"), "hd").fill_null(False))  # hd re-counts a wait
    tids, where = np.unique(_col(jitter, "tid")[own], return_inverse=True)
    sums = np.zeros(len(tids), np.int64)
    np.add.at(sums, where, _col(jitter, "jitter_ns")[own])
    per = dict(zip(tids.tolist(), sums.tolist()))
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


def _col(table: Any, name: str, fill: int = 0) -> np.ndarray:
    return table.column(name).fill_null(fill).to_numpy()


def _top_cause(causes: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per jitter interval with causes: its id and the name of its biggest cause (ties: the first)."""
    if causes.num_rows == 0:
        return np.zeros(0, np.int64), np.zeros(0, object)
    jid, ns = _col(causes, "jitter"), _col(causes, "ns")
    order = np.lexsort((np.arange(len(ns)), -ns, jid))
    first = order[np.append(True, jid[order][1:] != jid[order][:-1])]
    kind, name = (causes.column(c).take(first).to_pylist() for c in ("kind", "name"))
    label = [k if k in ("self", "idle") else f"{k}:{n}" for k, n in zip(kind, name)]
    return jid[first], np.array(label, object)


def _bars(jitter: Any, causes: Any) -> list[tuple[str, float, np.ndarray, np.ndarray, np.ndarray]]:
    """The timeline's coloured bars per legend key, most bars first: sync jitter by type (upper half of a
    lane), lost time (hd, ns) by its top cause (lower half)."""
    jitter = jitter.filter(pc.greater(jitter.column("jitter_ns"), 0))
    types = np.array(jitter.column("type").to_pylist(), object)
    ids, tid, start, end = (_col(jitter, c) for c in ("id", "tid", "start_ns", "end_ns"))
    lost = (types == "hd") | (types == "ns")
    cid, cname = _top_cause(causes)
    label = np.full(len(ids), "?", object)
    if len(cid):  # cid is sorted: each interval's row in it, where it has one
        pos = np.minimum(np.searchsorted(cid, ids), len(cid) - 1)
        hit = cid[pos] == ids
        label[hit] = cname[pos[hit]]
    out = []
    for sel, keys, y0 in ((~lost, types, -0.4), (lost, label, 0.0)):
        names, counts = np.unique(keys[sel].astype(str), return_counts=True)
        for k in names[np.argsort(-counts, kind="stable")]:
            s = sel & (keys == k)
            out.append((str(k), y0, tid[s], start[s], end[s]))
    return out


def figures(run: Run) -> list[Figure]:

    s = run.summary
    jitter = run.table("jitter")
    waits = run.table("waits")
    waits = waits.filter(pc.is_valid(waits.column("exit_ns")))
    lanes = [(t["tid"], f"{t['name'] or 'thread'} {t['tid']}") for t in run.table("threads").to_pylist()]
    planned: list[Planned] = [
        (
            "timeline",
            "Waits (grey) per thread; jitter by type (upper half); time lost by its top cause (lower half)",
            plotting.drawn,
            partial(
                timeline,
                lanes,
                (_col(waits, "tid"), _col(waits, "enter_ns"), _col(waits, "exit_ns")),
                _bars(jitter, run.table("causes")),
                "waits and jitter per thread",
            ),
        )
    ]
    types = np.array(jitter.column("type").to_pylist(), object)
    t_ns = _col(jitter, "t_ns")
    groups = [(t, t_ns[types == t]) for t in s["types"]]
    groups = [g for g in groups if len(g[1])]
    threshold = s["run"]["threshold_ns"]
    if groups:
        planned.append(
            (
                "types",
                "Distribution of T per type (every interval, jitter or not)",
                plotting.drawn,
                partial(type_distributions, groups, threshold, "T per type"),
            )
        )
    frames = run.table("frames").to_pylist()
    if len(frames) > 1:
        ft = np.array([f["end_ns"] - f["start_ns"] for f in frames], np.int64)
        planned.append(
            (
                "frames",
                "Frame time distribution",
                plotting.drawn,
                partial(type_distributions, [("frame time", ft)], threshold, "frame time"),
            )
        )
    return draw_figures(planned)


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
