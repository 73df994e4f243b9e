"""A sync run's raw logs (+ trace) -> its Parquet tables and summary.json (docs/run-format.md)."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from jitterscope import childgroup
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import rows_table, write_json, write_table
from jitterscope.simulate.enough import too_few
from jitterscope.sync import critical, model, records, subframes, symbols
from jitterscope.sync.causetable import CauseTable
from jitterscope.sync.rows import Frame, Interval, Object, Step, Table, Thread, Wait
from jitterscope.sync.schema import TABLES
from jitterscope.sync.summary import CauseShare, Dist, Fit, RunHeader, Summary, TopObject, TypeStats

TOP_OBJECTS = 10
REPLICATES = 100  # the fit's bootstrap
TOP_CAUSES = 5
KIND_OF_OP = {
    "lock": "mutex",
    "rdlock": "rwlock",
    "wrlock": "rwlock",
    "cond": "condvar",
    "barrier": "barrier",
    "join": "thread",
    "sem": "semaphore",
    "spin": "spinlock",
}
OBJ_KIND = {
    "lu": "mutex",
    "u": "mutex",
    "sw": "condvar",
    "s": "condvar",
    "bw": "condvar",
    "b": "condvar",
    "barw": "barrier",
    "bar": "barrier",
    "jw": "thread",
    "pw": "semaphore",
    "p": "semaphore",
    "hd": None,
    "ns": None,
}


def _table(rows: Table, name: str) -> pa.Table:
    return rows_table(rows, TABLES[name])


def _root_end(logs: list[records.ProcessLog], end: int | None, t0: int, hz: float) -> dict[int, int]:
    """The program's own process, if it did not end through exit(): its end as the tool saw it (its records stop
    at the last drain, up to 10 ms and any number of operations before a crash), in ns since t0."""
    if not logs or logs[0].complete or end is None:
        return {}
    h = logs[0].header
    tsc = int(h["start_tsc"]) + (int(end) - int(h["start_mono_ns"])) * hz / 1e9
    return {logs[0].pid: round((tsc - t0) * 1e9 / hz)}


def build(
    run_dir: Path,
    meta: dict[str, Any],
    hz: float,
    opts: model.Options,
    trace_dir: Path | None,
    fitter: childgroup.ForkedPool | None = None,
    own_tids: set[int] | None = None,
    drawer: childgroup.ForkedPool | None = None,
) -> Summary:
    """Analyse `run_dir/sync-raw` (and the trace); write every table, meta.json and summary.json.  The fit runs in
    `fitter`'s process (run_sync forks it before any thread starts), else in a thread of this one: a process
    forked here could inherit a lock another thread holds (an import's, in a command run in-process).
    `own_tids`: the sync command's threads and processes, its own overhead in the trace.  With `drawer`, the
    report's figures are drawn in its process as soon as their data is made (sync/report.py `predraw`)."""
    logs = records.read_logs(run_dir / "sync-raw")
    t0 = min((int(lg.header["start_tsc"]) for lg in logs), default=int(meta.get("t0_tsc") or 0))
    meta["t0_tsc"], meta["tsc_hz"] = t0, hz
    ev = model.load_events(logs, t0, hz)
    rows = model.threads(ev, _root_end(logs, meta.get("program_end_mono_ns"), t0, hz))
    root = logs[0].pid if logs else 0
    tids = {r["tid"] for r in rows}
    # Beside the main thread: a thread for the trace (its parser is a native process, so it overlaps the
    # matching) and the table writes (pyarrow, without the GIL); a process for the fit, mostly Python in
    # scipy's optimisers, which in a thread held the GIL from the causes and the summary (0.26 s on pigz).
    with ThreadPoolExecutor(2, thread_name_prefix="js-sync-build") as pool:
        # pyarrow writes without the GIL: each table is written as soon as it is made, beside what follows
        written: list[Future[None]] = []

        def write(name: str, data: Table | pa.Table) -> pa.Table:
            table = data if isinstance(data, pa.Table) else _table(data, name)
            written.append(pool.submit(write_table, run_dir, name, table, "sync"))
            return table

        timeline = reader = None
        if trace_dir is not None and logs:
            from jitterscope.sync.causes import explain, load_timeline
            from jitterscope.tracing.session import reader_info

            reader = reader_info(trace_dir)  # the trace reader's cost and density, as in a measure run
            timeline = pool.submit(load_timeline, trace_dir, t0, hz, tids, frozenset(own_tids or ()))
        write("events", _events(ev))
        m = model.match(ev, rows, opts)
        waits = write("waits", m.waits)
        jitter = _table(m.intervals, "jitter")  # the matching's rows; the causes' hd and ns rows follow them
        cols = model.IntervalColumns.of_table(jitter)  # the rows as columns, for every step below
        values = cols.jitter[(cols.jitter > 0) & cols.is_type(*model.SYNC_TYPES)].tolist()
        fit = _fitting(values, fitter, pool)
        causes = CauseTable.empty()
        if timeline is not None:
            tl = timeline.result()
            meta["lost_events"] = tl.lost_events
            meta["tracing"]["events"] = tl.events
            meta["tracing"]["missed_switches"] = tl.missed_switches
            meta["tracing"]["reader"] = reader
            new, causes = explain(tl, cols, m.waits, rows, opts.threshold_ns, opts.mode)
            jitter = pa.concat_tables([jitter, new]).combine_chunks()
            cols = model.IntervalColumns.of_table(jitter)
        write("jitter", jitter)
        cause_rows = write("causes", causes.arrow())
        steps = critical.walk(rows, m.waits, root)
        path_j = critical.path_jitter(steps, cols)
        counter = critical.counter_rule(rows, cols.take(~cols.is_type("hd")), root, opts.merge_at_barrier)
        root_row = next((r for r in rows if r["tid"] == root), None)
        run_start = root_row["start_ns"] if root_row else 0
        run_end = root_row["end_ns"] if root_row else 0
        fsel = ev.op == records.FRAME
        frames = critical.frames(ev.enter[fsel], ev.obj[fsel], run_start, run_end, cols, steps)
        if drawer is not None:  # the figures' data is made: drawn while the rest is computed and written
            _predraw(run_dir, drawer, rows, waits, jitter, cause_rows, opts.threshold_ns, frames)
        objects = _objects(run_dir, ev, m.waits, cols)
        subs = subframes.table(rows, cols, opts.subframe_ns, opts.warmup_subframes)
        tables: dict[str, Table | pa.Table] = {
            "threads": rows,
            "segments": model.segments(rows, m.waits),
            "critical_path": steps,
            "frames": frames,
            "objects": objects,
            "subframes": subs,
        }
        for name, data in tables.items():
            write(name, data)
        meta["duration_s"] = round(max(run_end - run_start, 0) / 1e9, 6)
        meta["processes"] = ev.processes
        meta["dropped"] = int(sum(p["dropped"] for p in ev.processes))
        summary = make_summary(
            _header(meta, opts),
            opts,
            len(ev.processes),
            rows,
            m,
            cols,
            causes,
            counter,
            steps,
            path_j,
            frames,
            objects,
            run_end - run_start,
            int(meta.get("dropped", 0)),
            int(meta.get("lost_events", 0)),
            fit=fit(),
        )
        for w in written:
            w.result()
        summary["subframes"] = subframes.summary(subs, opts.subframe_ns, opts.warmup_subframes)
    write_json(run_dir / "meta.json", meta)
    write_json(run_dir / "summary.json", summary)
    return summary


def _predraw(
    run_dir: Path,
    drawer: childgroup.ForkedPool,
    rows: list[Thread],
    waits: pa.Table,
    jitter: pa.Table,
    causes: pa.Table,
    threshold: int,
    frames: list[Frame],
) -> None:
    """The report's figures started in `drawer`'s process.  Only a head start: on any failure here (a dead
    helper, a bug in the figures' data) the report draws them itself, where the error is its own, and the
    analysis goes on."""
    from jitterscope.sync import report

    types = model.SYNC_TYPES + ("hd", "ns")  # as the summary has them
    try:
        report.predraw(run_dir, drawer, report.plan(rows, waits, jitter, causes, types, threshold, frames))
    except Exception:  # noqa: BLE001
        report.forget(run_dir)


def _events(ev: model.Events) -> pa.Table:
    """Every record as the events table, straight from the arrays (a row dict per record cost seconds)."""
    names = records.TYPE_NAMES
    codes, where = np.unique(np.asarray(ev.op, np.int64), return_inverse=True)
    op = np.array([names.get(int(c), str(int(c))) for c in codes], object)[where]
    cols = {
        "pid": ev.pid,
        "tid": ev.tid,
        "op": op,
        "obj": ev.obj,
        "aux": ev.aux,
        "site": ev.site,
        "enter_ns": ev.enter,
        "exit_ns": ev.exit,
        "cpu": ev.cpu,
        "flags": ev.flags,
        "result": ev.result,
    }
    schema = TABLES["events"]
    return pa.Table.from_arrays([pa.array(cols[f.name], type=f.type) for f in schema], schema=schema)


def _objects(
    run_dir: Path, ev: model.Events, waits: list[Wait], intervals: list[Interval] | model.IntervalColumns
) -> list[Object]:
    """Every object that had jitter or a wait, named from the process's saved address space."""
    kinds: dict[tuple[int, int], str] = {}
    site_of: dict[tuple[int, int], int] = {}
    for w in waits:
        kinds.setdefault((w["pid"], w["obj"]), KIND_OF_OP.get(w["op"], w["op"]))
        site_of.setdefault((w["pid"], w["obj"]), int(ev.site[w["event"]]))
    c = model.as_columns(intervals)
    rows = np.flatnonzero((c.jitter > 0) & c.is_type(*(t for t, k in OBJ_KIND.items() if k)))
    # only each object's first row can name it (setdefault): those, in order
    order = np.lexsort((rows, c.obj[rows], c.pid[rows]))
    p_, o_ = c.pid[rows[order]], c.obj[rows[order]]
    new = np.append(len(rows) > 0, (p_[1:] != p_[:-1]) | (o_[1:] != o_[:-1]))[: len(rows)]
    firsts = np.sort(rows[order[new]])
    for pid_, obj_, typ, site in zip(*(a[firsts].tolist() for a in (c.pid, c.obj, c.type, c.site))):
        kinds.setdefault((pid_, obj_), OBJ_KIND[model.TYPES[typ]] or "")
        site_of.setdefault((pid_, obj_), site)
    maps = {p["pid"]: symbols.read_maps(run_dir / "sync-raw" / (p["file"] + ".maps")) for p in ev.processes}
    by_pid: dict[int, list[int]] = defaultdict(list)
    for (pid, _), s in site_of.items():
        by_pid[pid].append(s)
    names = {pid: symbols.sites(maps.get(pid, []), sorted(set(v))) for pid, v in by_pid.items()}
    out: list[Object] = []
    for (pid, obj), kind in kinds.items():
        sym = f"thread {obj}" if kind == "thread" else symbols.object_name(maps.get(pid, []), obj)
        out.append(
            {
                "pid": pid,
                "obj": obj,
                "kind": kind,
                "symbol": sym,
                "site": names.get(pid, {}).get(site_of[(pid, obj)], ""),
            }
        )
    return out


def _dist(v: np.ndarray) -> Dist:
    if not len(v):
        return {"count": 0, "p50_ns": 0.0, "p99_ns": 0.0, "max_ns": 0.0, "mean_ns": 0.0}
    return {
        "count": int(len(v)),
        "p50_ns": float(np.percentile(v, 50)),
        "p99_ns": float(np.percentile(v, 99)),
        "max_ns": float(v.max()),
        "mean_ns": float(v.mean()),
    }


def _cause_list(causes: CauseTable, ids: Iterable[int] | np.ndarray) -> list[CauseShare]:
    agg = causes.of(ids).totals()
    covered = sum(agg.values())  # the intervals' time: shares of it, not of the (thresholded) jitter
    top = sorted(agg.items(), key=lambda kv: -kv[1])[:TOP_CAUSES]
    return [
        {"side": s, "kind": k, "name": n, "ns": ns, "share": ns / covered if covered else 0.0} for (s, k, n), ns in top
    ]


def _header(meta: dict[str, Any], opts: model.Options) -> RunHeader:
    """summary.json "run": from meta.json and the analysis options."""
    return {
        "id": meta["id"],
        "host": meta["host"],
        "kernel": meta["kernel"],
        "start": meta["start"],
        "command": meta["command"],
        "exit_code": meta["exit_code"],
        "duration_s": meta["duration_s"],
        "threshold_ns": opts.threshold_ns,
        "mode": opts.mode,
        "tracing": bool(meta["tracing"]["enabled"]),
        "cpus": meta["cpus"],
        "interrupted": meta.get("interrupted", False),
    }


def make_summary(
    run: RunHeader,
    opts: model.Options,
    processes: int,
    rows: list[Thread],
    m: model.Matched,
    intervals: list[Interval] | model.IntervalColumns,
    causes: CauseTable,
    counter: critical.Counts,
    steps: list[Step],
    path_j: int,
    frames: list[Frame],
    objects: list[Object],
    run_ns: int,
    dropped: int,
    lost_events: int,
    fit: Fit | None,
) -> Summary:
    """summary.json from the analysis's results."""
    c = model.as_columns(intervals)
    jit = c.jitter > 0
    sync = jit & c.is_type(*model.SYNC_TYPES)
    sync_ns = int(c.jitter[sync].sum())
    ns_ns = int(c.jitter[jit & c.is_type("ns")].sum())
    tracing = run["tracing"]
    types: dict[str, TypeStats] = {}
    for t in model.SYNC_TYPES + ("hd", "ns"):
        of_t = c.type == model.TYPES.index(t)
        allt = c.t[of_t]
        js = of_t & jit
        jv = c.jitter[js]
        types[t] = {
            "intervals": int(len(allt)),
            "count": int(len(jv)),
            "jitter_ns": int(jv.sum()),
            "share": float(jv.sum()) / sync_ns if sync_ns and t in model.SYNC_TYPES else 0.0,
            "t": _dist(allt),
            "jitter": _dist(jv),
            "causes": _cause_list(causes, c.id[js]) if tracing else [],
        }
    top = _top_objects(c, jit & ~c.is_type("ns"), objects, causes if tracing else None)
    fd = np.array([f["end_ns"] - f["start_ns"] for f in frames], dtype=np.int64)
    fj = np.array([f["jitter_ns"] for f in frames], dtype=np.int64)
    path_len = int(sum(s["end_ns"] - s["start_ns"] for s in steps))
    return {
        "run": run,
        "processes": processes,
        "unseen": list(records.UNSEEN),
        "threads": len(rows),
        "waits": len(m.waits),
        "run_ns": int(run_ns),
        "sync_jitter_ns": sync_ns,
        "sync_events": int(sync.sum()),
        "non_sync_jitter_ns": ns_ns if tracing else None,
        "sync_share_of_jitter": sync_ns / (sync_ns + ns_ns) if tracing and sync_ns + ns_ns else None,
        "holder_delay_ns": types["hd"]["jitter_ns"] if tracing else None,
        "types": types,
        "objects": top,
        "causes": _cause_list(causes, c.id[sync]) if tracing else [],
        "critical_path": {
            "counter_jitter_ns": counter.jitter_ns,
            "path_jitter_ns": int(path_j),
            "length_ns": path_len,
            "steps": len(steps),
            "share": counter.jitter_ns / run_ns if run_ns > 0 else 0.0,
            "threads": sorted({s["tid"] for s in steps}),
            "merge_at_barrier": opts.merge_at_barrier,
            "per_thread": {str(k): v for k, v in sorted(counter.per_thread.items())},
        },
        "frames": {"count": len(frames), "time": _dist(fd), "jitter": _dist(fj)},
        "fit": fit,  # computed beside the matching (build): None when there are too few values
        "unmatched": m.unmatched,
        "dropped": dropped,
        "lost_events": lost_events,
    }


def _top_objects(
    c: model.IntervalColumns, sel: np.ndarray, objects: list[Object], causes: CauseTable | None
) -> list[TopObject]:
    """The TOP_OBJECTS objects (pid, obj) with the most jitter among rows `sel`, ties in the order each object's
    first row comes; each with its rows' count, jitter by type (types in the order they first come) and causes."""
    rows = np.flatnonzero(sel)
    if not len(rows):
        return []
    pid, obj = c.pid[rows], c.obj[rows]
    order = np.lexsort((rows, obj, pid))  # by object, each object's rows in order
    new = np.append(True, (pid[order][1:] != pid[order][:-1]) | (obj[order][1:] != obj[order][:-1]))
    starts = np.flatnonzero(new)
    group = np.empty(len(rows), np.int64)
    group[order] = np.cumsum(new) - 1
    first = order[starts]  # each object's first row (a place in `rows`)
    totals = np.zeros(len(starts), np.int64)
    np.add.at(totals, group, c.jitter[rows])
    by_first = np.argsort(first, kind="stable")  # objects in the order their first rows come
    ranked = by_first[np.argsort(-totals[by_first], kind="stable")][:TOP_OBJECTS]
    names = {(o["pid"], o["obj"]): o for o in objects}
    top: list[TopObject] = []
    for g in ranked.tolist():
        mine = rows[group == g]
        key = (int(c.pid[mine[0]]), int(c.obj[mine[0]]))
        o = names.get(key)
        codes, at = np.unique(c.type[mine], return_index=True)
        by_type = {model.TYPES[int(k)]: int(c.jitter[mine][c.type[mine] == k].sum()) for k in codes[np.argsort(at)]}
        top.append(
            {
                "pid": key[0],
                "obj": f"0x{key[1]:x}",
                "kind": o["kind"] if o else "",
                "symbol": o["symbol"] if o else "",
                "site": o["site"] if o else "",
                "count": len(mine),
                "jitter_ns": int(totals[g]),
                "types": by_type,
                "causes": _cause_list(causes, c.id[mine]) if causes is not None else [],
            }
        )
    return top


def _fitting(
    values: list[int], fitter: childgroup.ForkedPool | None, threads: ThreadPoolExecutor
) -> Callable[[], Fit | None]:
    """The fit started in `fitter`'s process (else in a thread); call the result to wait for it.  Too few
    values to fit are said at once, and the fit's process (importing the fit's modules since CMD started) is ended."""
    refused = too_few(len(values), len(values), "events")
    if refused is not None:
        if fitter is not None:
            fitter.abandon()
        return lambda: {"fitted": False, "reason": refused}
    if fitter is not None:
        pending = fitter.submit(_fit, values, FIT_PROCESSES)
        return lambda: fitter.result(pending)
    return threads.submit(_fit, values, 1).result


# The fit's process shares its parts out with processes it forks (a second of CPU on pigz, which the summary
# waited for), up to three: its largest part is a third of the whole.
FIT_PROCESSES = min(len(os.sched_getaffinity(0)), 3)


def _fit(values: list[int], processes: int = 1) -> Fit | None:
    """Distribution of sync jitter above N: the candidate families and GPD tail (simulate/fitting.py), in
    `processes` processes (more than 1 only in the fit's own process, which runs one thread)."""

    from jitterscope.simulate.fitting import fit_delays, fit_parts_forked, positive_delays  # lazy: scipy.special

    x = np.asarray(values, dtype=float) / 1e9
    try:
        parts = fit_parts_forked(positive_delays(x, 0.0), REPLICATES, processes=processes) if processes > 1 else None
        f = fit_delays(x, phase_s=0.0, replicates=REPLICATES, seed=0, parts=parts)
    except JitterscopeError as err:
        return {"fitted": False, "reason": str(err).split(":")[0].replace("phases of 0 ms", "events")}
    best = next(ff for ff in f.families if ff.rank == 1)
    lognormal = next(ff for ff in f.families if ff.family == "lognormal")
    return {
        "fitted": True,
        "best": best.family,
        "verdict": f.verdict.split(";")[0],
        "lognormal": {
            "median_ns": lognormal.params["median"] * 1e9,
            "sigma": lognormal.params["sigma"],
            "fits": lognormal.fits,
        },
        "tail": {"xi": f.tail["xi"], "threshold_ns": f.tail["threshold_s"] * 1e9, "fits": f.tail["fits"]}
        if f.tail
        else None,
    }
