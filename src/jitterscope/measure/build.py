"""Turn what a measurement captured into the run directory's tables and summary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from jitterscope.errors import JitterscopeError
from jitterscope.measure import peers, stream
from jitterscope.measure import summary as S
from jitterscope.measure.attribution import (
    Attribution,
    attribute,
)
from jitterscope.measure.events import SourceEvents
from jitterscope.measure.probe import read_detours
from jitterscope.measure.tsc import detours_ns, since_ns, to_ns
from jitterscope.rundir import write_json, write_table
from jitterscope.tracing.parse import lost_per_cpu
from jitterscope.tracing.session import reader_info

ANNOTATION_KINDS = ("work", "timer")

SELF_SUFFIX = peers.SELF_SUFFIX


def mark_own_threads(
    names: pa.Array, kinds: pa.Array, pids: np.ndarray, own: set[int], probe_tids: dict[int, int] | None = None
) -> pa.Array:
    """The tool's own threads named apart (by thread id), another jitterscope's too (measure/peers.py)."""
    return peers.name_threads(names, kinds, pids, own, probe_tids)


def build_run(
    run_dir: Path,
    meta: dict[str, Any],
    probe: Any,
    trace_dir: Path | None,
    own_tids: set[int] | None = None,
    allow_incomplete: bool = False,
    jobs: int | None = None,
) -> S.Summary:
    """Write detours/activity/attribution Parquet, meta.json and summary.json.

    `own_tids` are the thread ids of this jitterscope (its Python threads, the
    probe's writer) so their time shows as the tool's own overhead.  The raw
    capture is left in place: the caller removes it once the run is durable
    (capture.finish); `allow_incomplete` reads the records of a killed probe."""
    hz, t0 = float(probe.tsc_hz), int(probe.t0_tsc)
    raw_path = run_dir / "detours.raw"
    raw = read_detours(raw_path, allow_incomplete=allow_incomplete)
    det_cpu, det_start, det_dur = detours_ns(raw, t0, hz)
    del raw
    cpus = [int(c) for c in meta["cpus"]]
    measured = {
        c: to_ns(max(0, int(probe.per_cpu[c]["last_tsc"]) - int(probe.per_cpu[c]["first_tsc"])), hz)
        for c in cpus
        if c in probe.per_cpu
    }
    resolution = {c: float(probe.per_cpu[c]["resolution_ns"]) for c in cpus if c in probe.per_cpu}
    meta["tsc_hz"] = hz
    meta["t0_tsc"] = t0
    meta["duration_s"] = round(max(measured.values(), default=0.0) / 1e9, 6)
    meta["probe"] = {str(c): {k: v for k, v in probe.per_cpu[c].items()} for c in cpus if c in probe.per_cpu}
    meta["probe_dropped"] = int(sum(int(v.get("dropped", 0)) for v in probe.per_cpu.values()))
    write_table(run_dir, "detours", pa.table({"cpu": det_cpu, "start_ns": det_start, "duration_ns": det_dur}))

    lost = 0
    functions: dict[int, list[str]] = {}
    events: SourceEvents | None = None
    if trace_dir is not None:
        probe_tids = {int(s["tid"]): c for c, s in probe.per_cpu.items() if s.get("tid")}
        # each CPU's measured window: the probe's first and last reads
        edges = {
            c: since_ns(np.array([probe.per_cpu[c]["first_tsc"], probe.per_cpu[c]["last_tsc"]]), t0, hz)
            for c in measured
        }
        windows = {c: (float(e[0]), float(e[1])) for c, e in edges.items()}
        traced = analyse_trace(
            run_dir / "activity.parquet",
            trace_dir,
            det_cpu,
            det_start,
            det_dur,
            windows,
            own_tids or set(),
            probe_tids,
            t0,
            hz,
            jobs,
        )
        lost = int(sum(traced.lost_by_cpu.values()))
        meta["tracing"]["events"] = traced.n_events
        meta["tracing"]["lost_by_cpu"] = {str(k): int(v) for k, v in traced.lost_by_cpu.items()}
        meta["tracing"]["missed_switches"] = traced.missed_switches
        meta["tracing"]["reader"] = reader_info(trace_dir)
        att, events = traced.merged.attribution, traced.merged.events
        container, inside, ann_names = traced.merged.functions_in
        if len(container):
            functions = _functions(container, inside, ann_names)
    else:
        att = attribute(
            det_cpu,
            det_start,
            det_dur,
            np.zeros(0, np.int32),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.int32),
            [("unexplained", "unexplained")],
        )
    meta["lost_events"] = lost
    _write_attribution(run_dir, att, det_cpu)
    summary = make_summary(meta, att, det_cpu, det_start, det_dur, measured, resolution, functions, events)
    write_json(run_dir / "meta.json", meta)
    write_json(run_dir / "summary.json", summary)
    return summary


@dataclass
class TracedRun:
    """What the streaming analysis of a run's trace leaves for its summary and meta.json."""

    merged: stream.Merged
    n_events: int
    lost_by_cpu: dict[int, int]
    missed_switches: int


def analyse_trace(
    activity_path: Path | None,
    trace_dir: Path,
    det_cpu: np.ndarray,
    det_start: np.ndarray,
    det_dur: np.ndarray,
    windows: dict[int, tuple[float, float]] | None,
    own_tids: set[int],
    probe_tids: dict[int, int],
    t0: int,
    hz: float,
    jobs: int | None = None,
    functions: bool = True,
) -> TracedRun:
    """Attribute the detours (sorted by cpu, then start; on one CPU they may overlap) to what the trace of
    `trace_dir` shows running, streaming per CPU in `jobs` processes (measure/stream.py), and write its activity
    table to `activity_path` (None: not kept).  `windows`: each CPU's measured window, where its sources' events
    are counted (None: not counted); `functions`: keep the work/timer functions run inside detours.  Every mode
    that attributes time to a kernel trace does it here: measure's detours, a pipeline's iterations
    (pipeline/late.py)."""
    if not (Path(trace_dir) / "events.txt").exists():
        raise JitterscopeError(f"{trace_dir}: not a jitterscope trace (events.txt missing)")
    facts = stream.trace_facts(trace_dir)
    det_end = det_start + det_dur
    cpus = stream.trace_cpus(trace_dir)
    offsets = {int(c): int(i) for c, i in zip(*np.unique(det_cpu, return_index=True))}
    job_list = []
    for c in cpus:
        lo = offsets.get(c, 0)
        hi = lo + int(np.count_nonzero(det_cpu == c))
        job_list.append(
            stream.CpuJob(
                trace_dir=Path(trace_dir),
                cpu=c,
                det_start=det_start[lo:hi],
                det_end=det_end[lo:hi],
                window_ns=windows.get(c) if windows is not None else None,
                t0_tsc=t0,
                hz=hz,
                parse_hz=facts.hz,
                parse_window=facts.window,
                open_end=facts.open_end,
                own=frozenset(own_tids),
                probe_tids=probe_tids,
                functions=functions,
            )
        )
    processes = jobs if jobs is not None else stream.default_jobs()
    parts = stream.run_jobs(job_list, activity_path, processes)
    merged = stream.merge(parts, det_start, det_end, offsets, windows)
    lost = lost_per_cpu(merged.counts, facts.stats)
    cpu_counts = merged.counts["cpus"].values()
    return TracedRun(
        merged=merged,
        n_events=int(sum(int(v["events"]) for v in cpu_counts)),
        lost_by_cpu=lost,
        missed_switches=int(sum(int(v.get("missed_switches", 0)) for v in cpu_counts)),
    )


def _functions(container: np.ndarray, inside: np.ndarray, names: list[str]) -> dict[int, list[str]]:
    """Per source, the work/timer functions it ran inside detours, most time first."""
    out: dict[int, dict[str, int]] = {}
    for c, ns, n in zip(container, inside, names):
        if c == 0 or ns <= 0:
            continue
        d = out.setdefault(int(c), {})
        d[str(n)] = d.get(str(n), 0) + int(ns)
    return {c: [n for n, _ in sorted(d.items(), key=lambda kv: -kv[1])][: S.TOP_FUNCTIONS] for c, d in out.items()}


def _write_attribution(run_dir: Path, att: Attribution, det_cpu: np.ndarray) -> None:
    kinds = np.array([k for k, _ in att.sources], dtype=object)
    names = np.array([n for _, n in att.sources], dtype=object)
    write_table(
        run_dir,
        "attribution",
        pa.table(
            {
                "detour": att.detour,
                "cpu": det_cpu[att.detour] if len(att.detour) else np.zeros(0, np.int32),
                "kind": pa.array(kinds[att.source].tolist(), pa.string()),
                "name": pa.array(names[att.source].tolist(), pa.string()),
                "ns": att.ns,
                "offset_ns": att.offset_ns,
            }
        ),
    )


def make_summary(
    meta: dict[str, Any],
    att: Attribution,
    det_cpu: np.ndarray,
    det_start: np.ndarray,
    det_dur: np.ndarray,
    measured: dict[int, float],
    resolution: dict[int, float],
    functions: dict[int, list[str]],
    events: SourceEvents | None = None,
) -> S.Summary:
    """summary.json; `events` (measure/events.py) adds each source's own event count and rate."""
    total = int(det_dur.sum())
    exposure_s = sum(measured.get(int(c), 0.0) for c in meta["cpus"]) / 1e9
    tracing = bool(meta["tracing"]["enabled"])
    unexplained_ns = float(att.ns[att.source == 0].sum())
    likely = S.likely_unexplained(
        meta.get("virtualization"),
        tracing,
        meta["tracing"].get("reason"),
        None if meta.get("steal_ns") is None else float(meta["steal_ns"]),
        unexplained_ns,
        S.long_unexplained_share(att),
    )
    return {
        "run": {
            "id": meta["id"],
            "host": meta["host"],
            "kernel": meta["kernel"],
            "start": meta["start"],
            "duration_s": meta["duration_s"],
            "threshold_ns": meta["options"]["threshold_ns"],
            "tracing": tracing,
            "cpus": meta["cpus"],
        },
        "cpus": S.cpu_table(det_cpu, det_dur, [int(c) for c in meta["cpus"]], measured, resolution),
        "sources": S.source_list(att, det_cpu, det_start, total, functions, events, exposure_s) if tracing else [],
        "quiet_sources": S.quiet_sources(att, events) if tracing else [],
        "chains": S.chain_list(att, det_dur) if tracing else [],
        "unexplained": S.unexplained_part(att, total, likely),
        "lost_events": int(meta.get("lost_events", 0)),
    }
