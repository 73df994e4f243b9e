"""A sync run as Chrome/Perfetto trace JSON: threads, their waits and the kernel causes on one timeline.

* One process per program process, one track per thread (its name and tid).
  Each contended wait is a complete ("X") event `wait <op> <object>` from its
  entry to its return; the waiter-side jitter interval (lu, sw, bw, barw, jw:
  release -> return) is nested inside it, the caller-side ones (u, s, b, bar)
  sit on the releaser's track, each with T, its jitter and its causes (ns per
  kernel source) as args.  A flow arrow goes from the release to the wait's
  return.  Holder delay (hd) and non-synchronisation (ns) intervals are on a
  second track per thread, `<name> · lost`, since they overlap its waits.
* With a trace, a "kernel" process with one track per CPU: what ran there
  (interrupts, softirqs, other tasks, the program's own threads) during every
  jitter interval, clipped to it, so a late wake-up's cause sits under it.
Times are microseconds since the run's t0 (the format's unit), ns precision.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from jitterscope import atomic
from jitterscope.export.perfetto import ArgValue, Trace, TraceEvent
from jitterscope.kinds import Exported
from jitterscope.measure.tsc import since_ns
from jitterscope.rundir import Run
from jitterscope.sync.render import TYPE_LABELS, cause_label
from jitterscope.tracing.parse import parse_trace
from jitterscope.units import format_ns

KERNEL_PID = 1 << 22  # above any kernel pid: the CPU tracks' process
LOST_TRACK = 1 << 22  # tid + this: a thread's second track (hd, ns)
MAX_KERNEL_EVENTS = 200_000


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


def _x(pid: int, tid: int, start: int, end: int, name: str, cat: str, args: dict[str, ArgValue]) -> TraceEvent:
    return {
        "ph": "X",
        "pid": pid,
        "tid": tid,
        "ts": _us(start),
        "dur": _us(max(end - start, 0)),
        "name": name,
        "cat": cat,
        "args": args,
    }


def _meta(pid: int, tid: int | None, what: str, name: str, order: int | None = None) -> list[TraceEvent]:
    e: TraceEvent = {"ph": "M", "pid": pid, "name": what, "args": {"name": name}}
    if tid is not None:
        e["tid"] = tid
    out = [e]
    if order is not None and tid is not None:
        out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": order}})
    return out


def _thread_events(run: Run) -> tuple[list[TraceEvent], list[tuple[int, int, int]]]:
    """Thread tracks: waits, jitter intervals, flows; and the (cpu, start, end) windows of every jitter."""
    ev: list[TraceEvent] = []
    names = {(o["pid"], o["obj"]): o["symbol"] or hex(o["obj"]) for o in run.table("objects").to_pylist()}
    for p in run.meta.get("processes", []):
        ev += _meta(p["pid"], None, "process_name", f"{p['comm']} (pid {p['pid']})")
    for k, t in enumerate(run.table("threads").to_pylist()):
        label = f"{t['name'] or 'thread'} {t['tid']}"
        ev += _meta(t["pid"], t["tid"], "thread_name", label, 2 * k)
        ev += _meta(t["pid"], t["tid"] + LOST_TRACK, "thread_name", f"{label} · lost", 2 * k + 1)
    for w in run.table("waits").to_pylist():
        if w["exit_ns"] is None:
            continue
        obj = names.get((w["pid"], w["obj"]), hex(w["obj"]))
        ev.append(
            _x(
                w["pid"],
                w["tid"],
                w["enter_ns"],
                w["exit_ns"],
                f"wait {w['op']} {obj}",
                "wait",
                {"object": obj, "releaser_tid": w["releaser_tid"], "release_ns": w["release_ns"]},
            )
        )
        if w["releaser_tid"] and w["release_ns"] is not None:
            fid, pid, rel, ret = int(w["wait"]), w["pid"], _us(w["release_ns"]), _us(w["exit_ns"])
            ev.append(
                {
                    "ph": "s",
                    "cat": "release",
                    "name": "release",
                    "id": fid,
                    "pid": pid,
                    "tid": w["releaser_tid"],
                    "ts": rel,
                }
            )
            ev.append(
                {
                    "ph": "f",
                    "bp": "e",
                    "cat": "release",
                    "name": "release",
                    "id": fid,
                    "pid": pid,
                    "tid": w["tid"],
                    "ts": ret,
                }
            )
    causes: dict[int, dict[str, int]] = defaultdict(dict)
    for c in run.table("causes").to_pylist():
        key = cause_label(c) if c["kind"] == "self" else f"{c['side']} {cause_label(c)}"
        causes[c["jitter"]][key] = causes[c["jitter"]].get(key, 0) + c["ns"]
    windows = []
    for r in run.table("jitter").to_pylist():
        if r["jitter_ns"] <= 0:
            continue
        lost = r["type"] in ("hd", "ns")
        label = TYPE_LABELS.get(r["type"], {"hd": "holder delay", "ns": "non-sync"}.get(r["type"], r["type"]))
        top = max(causes[r["id"]].items(), key=lambda kv: kv[1])[0] if causes[r["id"]] else ""
        ev.append(
            _x(
                r["pid"],
                r["tid"] + (LOST_TRACK if lost else 0),
                r["start_ns"],
                r["end_ns"],
                f"{r['type']} {format_ns(r['jitter_ns'])}" + (f" ({top})" if top else ""),
                "jitter",
                {
                    "type": label,
                    "t_ns": r["t_ns"],
                    "jitter_ns": r["jitter_ns"],
                    "cpu": r["cpu"],
                    "releaser_tid": r["releaser_tid"],
                    "causes_ns": causes[r["id"]],
                },
            )
        )
        windows.append((int(r["cpu"]), int(r["start_ns"]), int(r["end_ns"])))
    return ev, windows


def _kernel_events(run: Run, windows: list[tuple[int, int, int]]) -> list[TraceEvent]:
    """What ran on each CPU inside the jitter windows, from the run's trace (clipped to the windows)."""
    td = parse_trace(run.path / "trace")
    act = td.activity
    t0, hz = int(run.meta["t0_tsc"]), float(run.meta["tsc_hz"])
    cpu = act.column("cpu").to_numpy()
    a_s, a_e = since_ns(act.column("start_tsc").to_numpy(), t0, hz), since_ns(act.column("end_tsc").to_numpy(), t0, hz)
    kinds, names, pids = act.column("kind").to_pylist(), act.column("name").to_pylist(), act.column("pid").to_numpy()
    ev: list[TraceEvent] = _meta(KERNEL_PID, None, "process_name", "kernel (per CPU)")
    by_cpu: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for c, s, e in windows:
        by_cpu[c].append((s, e))
    for c in sorted(by_cpu):
        ev += _meta(KERNEL_PID, c, "thread_name", f"CPU {c}", c)
        ms, me = _merge(by_cpu[c])
        sel = np.flatnonzero(cpu == c)
        lo = np.searchsorted(me, a_s[sel], side="right")  # first window ending after the start
        hi = np.searchsorted(ms, a_e[sel], side="left")  # first window starting at/after the end
        for j, k0, k1 in zip(sel.tolist(), lo.tolist(), hi.tolist()):
            for k in range(k0, k1):
                s, e = max(int(a_s[j]), int(ms[k])), min(int(a_e[j]), int(me[k]))
                if e > s:
                    label = f"{names[j]} (tid {pids[j]})" if kinds[j] == "thread" else names[j]
                    ev.append(_x(KERNEL_PID, c, s, e, label, kinds[j], {"kind": kinds[j], "ns": e - s}))
            if len(ev) > MAX_KERNEL_EVENTS:
                return ev
    return ev


def _merge(spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint, sorted union of the spans: (starts, ends)."""
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return np.array([s for s, _ in out], np.int64), np.array([e for _, e in out], np.int64)


def build_sync_trace(run: Run) -> Trace:
    events, windows = _thread_events(run)
    if run.summary["run"]["tracing"] and (run.path / "trace").is_dir():
        events += _kernel_events(run, windows)
    meta = [e for e in events if e["ph"] == "M"]
    body = sorted((e for e in events if e["ph"] != "M"), key=lambda e: (e["pid"], e["tid"], e["ts"], -e.get("dur", 0)))
    return {
        "traceEvents": meta + body,
        "displayTimeUnit": "ns",
        "otherData": {
            "kind": "sync",
            "host": run.meta.get("host"),
            "run": run.meta.get("id"),
            "command": run.meta.get("command"),
            "start": run.meta.get("start"),
        },
    }


def write_sync_perfetto(run: Run, out: Path) -> Exported:
    trace = build_sync_trace(run)
    atomic.write_text(out, json.dumps(trace, separators=(",", ":")))
    cats = Counter(e.get("cat") for e in trace["traceEvents"])
    return {
        "format": "perfetto",
        "files": [str(out)],
        "waits": cats["wait"],
        "jitter": cats["jitter"],
        "events": sum(1 for e in trace["traceEvents"] if e["ph"] == "X"),
    }
