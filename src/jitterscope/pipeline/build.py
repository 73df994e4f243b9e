"""The runtime's raw result → the pipeline run directory's tables, summary.json and meta.json."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from jitterscope.measure.tsc import since_ns, to_int_ns
from jitterscope.pipeline import schedule as SF
from jitterscope.pipeline.compiler import Schedule
from jitterscope.pipeline.graph import load_graph
from jitterscope.pipeline.late import attribute_iterations, late_summary
from jitterscope.pipeline.results import SubBox, Summary
from jitterscope.pipeline.runtime import read_result
from jitterscope.pipeline.stats import latency_stats
from jitterscope.rundir import drop_session_marks, write_json, write_table
from jitterscope.session import cut_short, read_meta
from jitterscope.tracing.session import complete_cut_short, reader_info

KIND = "pipeline"


def build_run(
    run_dir: Path,
    meta: dict[str, Any],
    sched: Schedule,
    trace_dir: Path | None,
    own_tids: set[int],
    late_percentile: float = 99.0,
) -> Summary:
    raw = run_dir / "raw"
    res = read_result(raw / "result.bin")
    hz, t0 = float(res.header["tsc_hz"]), int(res.header["t0_tsc"])
    meta["t0_tsc"] = t0
    it = res.iters
    n = len(it)
    release = since_ns(it["release_tsc"], t0, hz)
    start = since_ns(it["start_tsc"], t0, hz)
    end = since_ns(it["end_tsc"], t0, hz)
    latency = end - release
    idx = np.arange(n, dtype=np.int64)
    write_table(
        run_dir,
        "iterations",
        pa.table({"iteration": idx, "release_ns": release, "start_ns": start, "end_ns": end, "latency_ns": latency}),
        kind=KIND,
    )
    sinks = [b.name for b in sched.graph.boxes if b.kernel == "sink"]
    write_table(
        run_dir,
        "outputs",
        pa.table(
            {
                "iteration": np.repeat(idx, len(sinks)),
                "sink": pa.array(sinks * n, pa.string()),
                "digest": pa.array(res.digests.reshape(-1), pa.uint64()),
            }
        ),
        kind=KIND,
    )
    per_sub = _subbox_table(run_dir, sched, res.timers, release, t0, hz)
    meta["duration_s"] = round(float(end.max() - min(0, int(release.min()))) / 1e9, 6) if n else 0.0
    meta["iterations"] = n
    meta["guard_violations"] = int(res.header["guard_violations"])
    summary: Summary = {
        "run": {
            "id": meta["id"],
            "host": meta["host"],
            "start": meta["start"],
            "graph": sched.graph.name,
            "heuristic": sched.options.heuristic,
            "memory": sched.memory.allocator,
            "threads": len(sched.threads),
            "cpus": meta["cpus"],
            "iterations": n,
            "interrupted": bool(meta.get("interrupted")),
        },
        "latency": latency_stats(latency),
        "subboxes": per_sub,
        "outputs": {"sinks": sinks, "digest": _digest_of(res.digests)},
        "guard": {"enabled": bool(meta["options"]["guard"]), "violations": int(res.header["guard_violations"])},
    }
    if trace_dir is not None and n:
        att, lost = attribute_iterations(trace_dir, t0, hz, start, end, list(meta["cpus"]), own_tids)
        write_table(run_dir, "attribution", att, kind=KIND)
        meta["lost_events"] = lost
        meta["tracing"]["reader"] = reader_info(trace_dir)  # its cost and density, as in a measure run
        summary["late"] = late_summary(latency, att, late_percentile)
        summary["lost_events"] = lost
    write_json(run_dir / "summary.json", summary)
    write_json(run_dir / "meta.json", meta)
    shutil.rmtree(raw, ignore_errors=True)
    return summary


def _subbox_table(
    run_dir: Path, sched: Schedule, timers: np.ndarray | None, release: np.ndarray, t0: int, hz: float
) -> list[SubBox]:
    """Write subboxes.parquet (with timers) and return per-sub-box statistics for the summary."""
    if timers is None:
        return []
    n, m = timers.shape
    subs = sched.inst.subboxes
    thread = sched.plan.thread_of()
    s_ns = since_ns(timers["start_tsc"].reshape(-1), t0, hz).reshape(n, m) - release[:, None]
    d_ns = to_int_ns(timers["end_tsc"].astype(np.int64) - timers["start_tsc"].astype(np.int64), hz).reshape(n, m)
    write_table(
        run_dir,
        "subboxes",
        pa.table(
            {
                "iteration": np.repeat(np.arange(n, dtype=np.int64), m),
                "subbox": pa.array([x.name for x in subs] * n, pa.string()),
                "box": pa.array([x.box for x in subs] * n, pa.string()),
                "thread": np.tile(np.asarray(thread, np.int32), n),
                "start_ns": s_ns.reshape(-1),
                "duration_ns": d_ns.reshape(-1),
            }
        ),
        kind=KIND,
    )
    out: list[SubBox] = []
    for j, x in enumerate(subs):
        d = d_ns[:, j].astype(np.float64)
        out.append(
            {
                "name": x.name,
                "thread": thread[j],
                "mean_ns": float(d.mean()) if n else 0.0,
                "sd_ns": float(d.std(ddof=1)) if n > 1 else 0.0,
                "max_ns": float(d.max()) if n else 0.0,
                "start_mean_ns": float(s_ns[:, j].mean()) if n else 0.0,
            }
        )
    return out


def _digest_of(digests: np.ndarray) -> str:
    """One hex digest of every sink's digest of every iteration (equal runs, equal string)."""

    return hashlib.sha256(np.ascontiguousarray(digests, dtype="<u8").tobytes()).hexdigest()[:16]


def rebuild(run_dir: Path) -> list[str]:
    """Finish a run whose jitterscope was killed; return what could not be recovered.  The session
    wrote meta.json (marked incomplete), graph.yaml, schedule.yaml and raw/plan.bin before the runtime
    started, and the runtime wrote raw/result.bin as it stopped (it ends with its parent, finishing the
    iterations it had started).  Late iterations are attributed if traced."""
    meta = read_meta(run_dir)
    stage = drop_session_marks(meta)
    if not (run_dir / "raw" / "result.bin").exists():
        if stage in ("", "starting"):
            cut_short(run_dir, "killed before the pipeline runtime started: nothing was run")
        cut_short(run_dir, "the pipeline runtime left no result (raw/result.bin): nothing to rebuild")
    sched = SF.load(run_dir / "schedule.yaml", load_graph(run_dir / "graph.yaml"))
    trace = run_dir / "trace"
    traced = bool(meta.get("tracing", {}).get("enabled")) and trace.is_dir()
    missing = []
    if stage != "analysing":  # killed while it ran: the runtime ended early, with its parent
        meta["interrupted"] = True
        missing.append("the runtime's end line (its warnings and first guard violation)")
    own = meta.pop("own_tids", None)
    if traced and own is None:
        missing.append("jitterscope's own thread ids (the trace shows the pipeline's threads by name)")
    if traced:  # the session never stopped it: window, symbols, comms, lost events completed offline
        missing += complete_cut_short(trace, None, "the trace's last event")
    meta["recovered"] = {"by": "jitterscope analyze", "missing": missing}
    build_run(run_dir, meta, sched, trace if traced else None, set(own or ()))
    return missing
