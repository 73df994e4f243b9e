"""Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing).

One process ("jitterscope run <id>") with one thread track per CPU; a cluster
run has one process per node ("<host>:<cpu>").  Each
detour is a complete ("X") event; the kernel activity inside it is nested
below as X events on the same track, clipped to the detour so that nesting is
exact.  Timestamps are microseconds (the format's unit) with ns precision.
Format: "Trace Event Format", Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from jitterscope.atomic import atomic_open
from jitterscope.kinds import Exported
from jitterscope.rundir import Run

PID = 1

ArgValue = str | int | float | None | dict[str, int]  # an event's args: numbers, names, ns per source


class _EventBase(TypedDict):
    ph: str  # X complete, M metadata, s/f flow start/end
    pid: int
    name: str


class TraceEvent(_EventBase, total=False):
    """One trace event (the Trace Event Format's keys that jitterscope writes)."""

    tid: int
    ts: float  # microseconds
    dur: float
    cat: str
    args: dict[str, ArgValue]
    id: int  # a flow's
    bp: str  # a flow end's binding point


class TraceInfo(TypedDict, total=False):
    kind: str
    host: str | None
    kernel: str | None
    run: str | None
    command: list[str] | None
    start: str | None
    lost_events: int


class Trace(TypedDict):
    traceEvents: list[TraceEvent]
    displayTimeUnit: str
    otherData: TraceInfo


def _us(ns: np.ndarray | int) -> Any:
    return np.round(np.asarray(ns, dtype=np.float64) / 1000.0, 3)


def build_trace(run: Run) -> Trace:
    nodes = run.node_runs()
    events: list[TraceEvent] = []
    for i, (label, r) in enumerate(nodes):
        name = f"jitterscope run {run.meta.get('id')}" if r is run else label
        events += _node_events(r, PID + i, name)
    # Stable order: by track, start, then longer (outer) first, so viewers nest correctly.
    body = [e for e in events if e["ph"] == "X"]
    body.sort(key=lambda e: (e["pid"], e["tid"], e["ts"], -e["dur"]))
    return {
        "traceEvents": [e for e in events if e["ph"] == "M"] + body,
        "displayTimeUnit": "ns",
        "otherData": {
            "host": run.meta.get("host"),
            "kernel": run.meta.get("kernel"),
            "run": run.meta.get("id"),
            "start": run.meta.get("start"),
            "lost_events": int(run.meta.get("lost_events", 0) or 0),
        },
    }


def _node_events(run: Run, pid: int, process: str) -> list[TraceEvent]:
    d_cpu, d_start, d_dur = run.detour_arrays()
    d_end = d_start + d_dur
    events: list[TraceEvent] = [{"ph": "M", "pid": pid, "name": "process_name", "args": {"name": process}}]
    for i, c in enumerate(run.cpus):
        events.append({"ph": "M", "pid": pid, "tid": int(c), "name": "thread_name", "args": {"name": f"CPU {c}"}})
        events.append({"ph": "M", "pid": pid, "tid": int(c), "name": "thread_sort_index", "args": {"sort_index": i}})
    # Per detour: its sources and their ns, as the detour event's args.
    att = run.attribution
    a_det = att.column("detour").to_numpy()
    labels = [f"{k}:{n}" for k, n in zip(att.column("kind").to_pylist(), att.column("name").to_pylist())]
    a_ns = att.column("ns").to_numpy()
    parts: dict[int, dict[str, int]] = {}
    for d, lab, ns in zip(a_det.tolist(), labels, a_ns.tolist()):
        parts.setdefault(d, {})[lab] = ns
    ts, dur = _us(d_start), _us(d_dur)
    for i in range(len(d_start)):
        src = parts.get(i, {})
        top = max(src, key=lambda lab: src[lab]) if src else "detour"
        events.append(
            {
                "ph": "X",
                "pid": pid,
                "tid": int(d_cpu[i]),
                "ts": float(ts[i]),
                "dur": float(dur[i]),
                "name": f"detour ({top.split(':', 1)[-1]})",
                "cat": "detour",
                "args": {"duration_ns": int(d_dur[i]), "sources_ns": src},
            }
        )
    # Kernel activity overlapping a detour, clipped to it (an activity on a
    # probed CPU overlaps at most one detour: the probe was not running).
    act = run.activity
    if act.num_rows:
        a_cpu = act.column("cpu").to_numpy()
        a_s = act.column("start_ns").to_numpy()
        a_e = act.column("end_ns").to_numpy()
        kinds = act.column("kind").to_pylist()
        names = act.column("name").to_pylist()
        depth = act.column("depth").to_numpy()
        for c in run.cpus:
            dsel = np.flatnonzero(d_cpu == c)
            asel = np.flatnonzero(a_cpu == c)
            if not len(dsel) or not len(asel):
                continue
            k = np.searchsorted(d_start[dsel], a_e[asel], side="left") - 1
            ok = k >= 0
            k = np.where(ok, k, 0)
            hit = ok & (d_end[dsel][k] > a_s[asel])
            for j, kk in zip(asel[hit], k[hit]):
                di = dsel[kk]
                s, e = max(a_s[j], d_start[di]), min(a_e[j], d_end[di])
                if e <= s:
                    continue
                events.append(
                    {
                        "ph": "X",
                        "pid": pid,
                        "tid": int(c),
                        "ts": float(_us(s)),
                        "dur": float(_us(e - s)),
                        "name": names[j],
                        "cat": kinds[j],
                        "args": {"kind": kinds[j], "depth": int(depth[j]), "ns": int(e - s)},
                    }
                )
    return events


def write_perfetto(run: Run, out: Path) -> Exported:
    trace = build_trace(run)
    with atomic_open(out, "w") as f:
        json.dump(trace, f, separators=(",", ":"))
    n = sum(1 for e in trace["traceEvents"] if e.get("cat") == "detour")
    return {
        "format": "perfetto",
        "files": [str(out)],
        "detours": n,
        "events": sum(1 for e in trace["traceEvents"] if e["ph"] == "X"),
    }
