"""The HTML page of a sync run (report/templates/sync.html.j2): data first (summary.json and the
tables), then figures (sync/plots.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jitterscope import plotting
from jitterscope.childgroup import ForkedPool
from jitterscope.report.page import Column, Figure, PageData, PageTable, Planned, draw_figures, render_page
from jitterscope.rundir import Run
from jitterscope.sync.plots import timeline, type_distributions
from jitterscope.sync.render import TYPE_LABELS, causes_text, notes
from jitterscope.sync.rows import Frame, Thread
from jitterscope.sync.summary import Summary, read
from jitterscope.units import format_ns

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
        f"{s['threads']} threads, {s['waits']} contended waits; N = {format_ns(r['threshold_ns'])} ({r['mode']} "
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
                    ", ".join(f"{k} {format_ns(v)}" for k, v in o["types"].items()),  # as the terminal says them
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


def _strings(column: Any) -> np.ndarray:
    """A string column as a numpy object array (None for a null), through its few distinct values: a Python
    string per row from to_pylist cost a tenth of a second on a pigz run's 100 k intervals."""
    enc = column.combine_chunks().dictionary_encode()
    names = np.array(enc.dictionary.to_pylist() + [None], object)
    return names[enc.indices.fill_null(len(enc.dictionary)).to_numpy()]


def _top_cause(causes: Any) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per jitter interval with causes: its id and its biggest cause (ties: the first), as a code into the
    returned names ("kind:name", or "self", "idle")."""
    if causes.num_rows == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), []
    jid, ns = _col(causes, "jitter"), _col(causes, "ns")
    order = np.lexsort((np.arange(len(ns)), -ns, jid))
    first = order[np.append(True, jid[order][1:] != jid[order][:-1])]
    kind, name = (causes.column(c).combine_chunks().dictionary_encode() for c in ("kind", "name"))
    pair = kind.indices.to_numpy()[first].astype(np.int64) * len(name.dictionary) + name.indices.to_numpy()[first]
    pairs, code = np.unique(pair, return_inverse=True)
    kinds, names = kind.dictionary.to_pylist(), name.dictionary.to_pylist()
    labels = []
    for p in pairs.tolist():
        k, n = kinds[p // len(names)], names[p % len(names)]
        labels.append(k if k in ("self", "idle") else f"{k}:{n}")
    distinct = sorted(set(labels))  # pairs of one label ("self" of any name) are one
    at = {x: i for i, x in enumerate(distinct)}
    return jid[first], np.array([at[x] for x in labels], np.int64)[code.reshape(-1)], distinct


def _bars(jitter: Any, causes: Any) -> list[tuple[str, float, np.ndarray, np.ndarray, np.ndarray]]:
    """The timeline's coloured bars per legend key, most bars first: sync jitter by type (upper half of a
    lane), lost time (hd, ns) by its top cause (lower half)."""
    jitter = jitter.filter(pc.greater(jitter.column("jitter_ns"), 0))
    enc = jitter.column("type").combine_chunks().dictionary_encode()
    type_names = [str(t) for t in enc.dictionary.to_pylist()]
    types = enc.indices.to_numpy()  # the type is never null (schema.JITTER rows all have one)
    ids, tid, start, end = (_col(jitter, c) for c in ("id", "tid", "start_ns", "end_ns"))
    lost = np.isin(types, [k for k, t in enumerate(type_names) if t in ("hd", "ns")])
    cid, ccode, cnames = _top_cause(causes)
    if "?" not in cnames:
        cnames = [*cnames, "?"]
    label = np.full(len(ids), cnames.index("?"), np.int64)  # no cause: "?"
    if len(cid):  # cid is sorted: each interval's row in it, where it has one
        pos = np.minimum(np.searchsorted(cid, ids), len(cid) - 1)
        hit = cid[pos] == ids
        label[hit] = ccode[pos[hit]]
    out = []
    for sel, keys, names, y0 in ((~lost, types, type_names, -0.4), (lost, label, cnames, 0.0)):
        # keys by how many bars they have, most first; ties in the order of their names
        counts = np.bincount(keys[sel], minlength=len(names))
        present = [k for k in sorted(range(len(names)), key=lambda k: names[k]) if counts[k]]
        for k in sorted(present, key=lambda k: -counts[k]):
            s = sel & (keys == k)
            out.append((names[k], y0, tid[s], start[s], end[s]))
    return out


def plan(
    threads: Sequence[Thread],
    waits: pa.Table,
    jitter: pa.Table,
    causes: pa.Table,
    types: Iterable[str],
    threshold: int,
    frames: Sequence[Frame],
) -> list[Planned]:
    """The figures of a sync run from its tables (threads and frames as rows), the summary's types in order
    and its threshold N: the same whether read back from the run directory (`figures`) or handed over by the
    analysis that made them (sync/build.py, drawn while it finishes: `predraw`)."""
    waits = waits.filter(pc.is_valid(waits.column("exit_ns")))
    lanes = [(t["tid"], f"{t['name'] or 'thread'} {t['tid']}") for t in threads]
    planned: list[Planned] = [
        (
            "timeline",
            "Waits (grey) per thread; jitter by type (upper half); time lost by its top cause (lower half)",
            plotting.drawn,
            partial(
                timeline,
                lanes,
                (_col(waits, "tid"), _col(waits, "enter_ns"), _col(waits, "exit_ns")),
                _bars(jitter, causes),
                "waits and jitter per thread",
            ),
        )
    ]
    kinds = _strings(jitter.column("type"))
    t_ns = _col(jitter, "t_ns")
    groups = [(t, t_ns[kinds == t]) for t in types]
    groups = [g for g in groups if len(g[1])]
    if groups:
        planned.append(
            (
                "types",
                "Distribution of T per type (every interval, jitter or not)",
                plotting.drawn,
                partial(type_distributions, groups, threshold, "T per type"),
            )
        )
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
    return planned


# Figures a sync command had drawn while its analysis finished (`predraw`), by run directory: its report
# takes them rather than drawing them again.
_PREDRAWN: dict[Path, tuple[ForkedPool, list[tuple[str, str, Future[str]]]]] = {}


def predraw(run_dir: Path, pool: ForkedPool, planned: list[Planned]) -> None:
    """Start drawing `planned`, the figures of the run being written to `run_dir`, in `pool`'s process."""
    _PREDRAWN[Path(run_dir).resolve()] = (
        pool,
        [(fid, cap, pool.submit(draw, data)) for fid, cap, draw, data in planned],
    )


def forget(run_dir: Path) -> None:
    """Drop what `predraw` started for `run_dir` (its report is not written, or was)."""
    _PREDRAWN.pop(Path(run_dir).resolve(), None)


def _predrawn(run: Run) -> list[Figure] | None:
    """The figures `predraw` drew for this run, if it did and they all came back (else they are drawn here)."""
    got = _PREDRAWN.pop(Path(run.path).resolve(), None)
    if got is None:
        return None
    pool, pending = got
    try:
        return [Figure(fid, cap, pool.result(f)) for fid, cap, f in pending]
    except Exception:  # noqa: BLE001 (drawn again here, where a drawing's own error is raised)
        return None


def figures(run: Run) -> list[Figure]:
    done = _predrawn(run)
    if done is not None:
        return done
    s = run.summary
    return draw_figures(
        plan(
            cast(list[Thread], run.table("threads").to_pylist()),
            run.table("waits"),
            run.table("jitter"),
            run.table("causes"),
            s["types"],
            s["run"]["threshold_ns"],
            cast(list[Frame], run.table("frames").to_pylist()),
        )
    )


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
