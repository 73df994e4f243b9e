"""`cluster bsp`: a real bulk-synchronous job, measured next to its predictions.

Every rank, pinned to its CPU: calibrate the work loop to one phase, measure
the noise-free cost of the synchronization, then P times: spin the calibrated
work (native/bspwork.c, which records every gap above the threshold: the noise
met during the work) and synchronize (MPI barrier or allreduce, polled against
a deadline).  Rank 0 gathers every rank's per-phase timings and gaps, writes a
cluster run directory and compares the measured runtime with the ideal and
with the simulator's trace-driven and fitted predictions from the very noise
recorded (cluster/predict.py).
"""

from __future__ import annotations

import os
import pickle
import socket
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from jitterscope import sysinfo
from jitterscope.atomic import atomic_path
from jitterscope.cluster import layout
from jitterscope.cluster.bsp_results import Analysis, BspNode, BspSummary, Measured, PredictionJson, RankTimings
from jitterscope.cluster.bspwork import WorkLoop, calibrate, rdtsc
from jitterscope.cluster.measure import check_out, choose_cpu, shared_cpu_warnings
from jitterscope.cluster.mpi import Cluster, ClusterTimeout
from jitterscope.cluster.summary import node_key
from jitterscope.errors import JitterscopeError
from jitterscope.measure import tsc
from jitterscope.rundir import base_meta, create_run_dir, new_run_path, write_json
from jitterscope.simulate.timeline import Timeline

SYNC_SAMPLES = 300
SYNC_THRESHOLD_NS = 20_000


@dataclass
class BspOptions:
    phase_ns: float
    phases: int
    sync: str
    threshold_ns: float
    cpu_map: list[int] | None
    out: Path | None
    timeout_s: float
    replications: int
    seed: int
    command_line: list[str]
    priority: int | None = None

    def __post_init__(self) -> None:
        if self.phases < 1:
            raise JitterscopeError("--phases must be at least 1")
        if self.replications < 1:
            raise JitterscopeError("--replications must be at least 1")
        if self.phase_ns < 10_000:
            raise JitterscopeError("--phase must be at least 10us (the work loop is calibrated to it)")


def _place(cluster: Cluster, opts: BspOptions) -> tuple[int, list[dict[str, Any]], Path | None]:
    """Choose and take this rank's CPU (and priority); rank 0 also checks the output directory.
    Returns the CPU, every rank's placement and (rank 0) the run directory to write."""
    cpu = choose_cpu(cluster.local_rank, sysinfo.online_cpus(), opts.cpu_map)
    sysinfo.check_cpus([cpu])
    peers = cluster.allgather_json(
        {"rank": cluster.rank, "real_host": cluster.real_host, "cpu": cpu, "node": cluster.node}, "CPU choice"
    )
    out: Path | None = None
    if cluster.rank == 0:
        for w in shared_cpu_warnings(peers):
            print(f"jitterscope: warning: {w}", file=sys.stderr)
        out = opts.out or new_run_path("bsp", cluster.node)
        check_out(out)
    os.sched_setaffinity(0, {cpu})  # the work and the synchronization run on the measured CPU
    if opts.priority is not None:
        try:  # only this rank's own scheduling: nothing on the system to restore
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(opts.priority))
        except PermissionError:
            raise JitterscopeError("--priority needs root or CAP_SYS_NICE") from None
    return cpu, peers, out


class _Sync:
    """The end of a phase (barrier or allreduce), polled against the --timeout deadline.

    Noise while waiting matters too (a preempted rank completes the barrier late): the poll
    loop keeps every gap above `threshold` cycles (its own iterations take about a microsecond)."""

    def __init__(self, cluster: Cluster, opts: BspOptions, threshold: int) -> None:
        self.cluster, self.opts, self.threshold = cluster, opts, threshold
        self.gaps: list[tuple[int, int]] = []
        self._send, self._recv = np.zeros(1), np.zeros(1)

    def __call__(self, value: float, since: int | None = None) -> int:
        """Synchronize; returns the read (cycles) that saw it complete.  Every interval from `since` (the
        work's last read; default: now) to that read is watched, the first and the last included: a rank
        preempted while it waits usually sees the synchronization complete in the very check that straddles
        the preemption (the other rank arrived meanwhile), and leaves late."""
        opts = self.opts
        deadline = time.monotonic() + opts.timeout_s
        prev = rdtsc() if since is None else since
        if opts.sync == "barrier":
            req = self.cluster.comm.Ibarrier()
        else:
            self._send[0] = value
            req = self.cluster.comm.Iallreduce(self._send, self._recv)
        checks = 0
        while True:
            done = req.Test()
            now = rdtsc()
            if now - prev > self.threshold:
                self.gaps.append((prev, now - prev))
            if done:
                return now
            prev = now
            checks += 1
            if checks % 1024 == 0 and time.monotonic() > deadline:
                raise ClusterTimeout(
                    f"a{'n' if opts.sync == 'allreduce' else ''} {opts.sync} did not complete "
                    f"within {opts.timeout_s:.0f} s (--timeout): another rank failed or hangs"
                )

    def cost(self) -> float:
        """The noise-free cost of one synchronization in cycles: the median of SYNC_SAMPLES."""
        costs = []
        for _ in range(SYNC_SAMPLES):
            a = rdtsc()
            self(1.0)
            costs.append(rdtsc() - a)
        self.gaps.clear()
        return float(statistics.median(costs))


@dataclass(frozen=True)
class _Phases:
    """One rank's P phases in cycles: each phase's work (first and last iteration), its gaps, its sync's end."""

    t0: int
    first: np.ndarray
    last: np.ndarray
    ngaps: np.ndarray
    gap_cycles: np.ndarray
    sync_end: np.ndarray
    gap_start: np.ndarray
    gap_len: np.ndarray


def _phases(loop: WorkLoop, iterations: int, sync: _Sync, phases: int, hz: float) -> _Phases:
    """P times: the calibrated work, then the synchronization.  Cycle counts relative to t0, the
    end of a first tight synchronization every rank leaves within a few microseconds.

    The timeline leaves no time unwatched: besides the work's gaps and the waits', the passages between
    them (this Python loop, 0.1-0.14 ms each way a phase on a 2-vCPU KVM guest) are kept when longer than
    the synchronization's threshold.  The job spends that time too; unwatched, it and the preemptions that
    land in it (the fair server's 50 ms grants to other tasks on a busy host) were missing from the
    replayed run, which fell 3-10% short of the measured one."""
    first, last, ngaps, gap_cycles, sync_end = (np.zeros(phases, dtype=np.int64) for _ in range(5))
    sync.cluster.checkpoint("start")
    sync(0.0)
    t0 = ended = rdtsc()
    sync.gaps.clear()
    for k in range(phases):
        f, la, g, gc = loop.spin(iterations)
        if f - ended > sync.threshold:
            sync.gaps.append((ended, f - ended))
        ended = sync_end[k] = sync((la - f) / hz, since=la)
        first[k], last[k], ngaps[k], gap_cycles[k] = f, la, g, gc
    gs, gl = loop.gaps()
    if sync.gaps:  # one timeline: the work's gaps and the waits' gaps, in time order
        sg = np.array(sync.gaps, dtype=np.uint64)
        gs, gl = np.concatenate([gs, sg[:, 0]]), np.concatenate([gl, sg[:, 1]])
        order = np.argsort(gs, kind="stable")
        gs, gl = gs[order], gl[order]
    return _Phases(t0, first, last, ngaps, gap_cycles, sync_end, gs.astype(np.int64), gl.astype(np.int64))


def bsp_rank(cluster: Cluster, opts: BspOptions) -> Path | None:
    """What every rank runs; rank 0 returns the run directory."""
    cpu, peers, out = _place(cluster, opts)
    hz = tsc.tsc_hz()
    loop = WorkLoop(max(1, round(tsc.to_ticks(opts.threshold_ns, hz))))
    cluster.checkpoint("calibration")
    cal = calibrate(loop, tsc.to_ticks(opts.phase_ns, hz))
    sync = _Sync(cluster, opts, max(loop.threshold, round(tsc.to_ticks(SYNC_THRESHOLD_NS, hz))))
    cluster.checkpoint("sync calibration")
    sync_cycles = sync.cost()
    ph = _phases(loop, cal.iterations, sync, opts.phases, hz)
    t0 = ph.t0

    def ns(cycles: np.ndarray) -> np.ndarray:  # whole ns, like every time in the run
        return tsc.to_int_ns(cycles, hz)

    timings: RankTimings = {
        "rank": cluster.rank,
        "host": cluster.node,
        "cpu": cpu,
        "real_host": cluster.real_host,
        "tsc_hz": hz,
        "iterations": cal.iterations,
        "cycles_per_iter": cal.cycles_per_iter,
        "sync_ns": tsc.to_ns(sync_cycles, hz),
        "dropped": loop.dropped,
        "compute_start_ns": ns(ph.first - t0),
        "compute_end_ns": ns(ph.last - t0),
        "gaps": ph.ngaps,
        "gap_ns": ns(ph.gap_cycles),
        "sync_end_ns": ns(ph.sync_end - t0),
        "gap_start_ns": ns(ph.gap_start - t0),
        "gap_len_ns": ns(ph.gap_len),
        "sync_gaps": len(sync.gaps),
        "sync_threshold_ns": tsc.to_ns(sync.threshold, hz),
        "kernel": os.uname().release,
        "start_unix_ns": time.time_ns() - int(ns(ph.sync_end[-1:] - t0)[0]),
    }
    payload = pickle.dumps(timings)
    got = cluster.gather_bytes(payload, "its phase timings")
    if cluster.rank != 0:
        return None
    assert out is not None and got is not None
    ranks = [pickle.loads(b) for b in got]
    create_run_dir(out)
    write_bsp_run(out, ranks, opts, peers)
    return out


def timeline(r: RankTimings) -> tuple[np.ndarray, np.ndarray, float]:
    """A rank's noise timeline over the whole run: the gaps its work loop saw
    (above --threshold) and those its synchronization waits saw (above
    SYNC_THRESHOLD_NS), in ns since the run's start."""
    s, ln = r["gap_start_ns"].astype(float), r["gap_len_ns"].astype(float)
    return s, ln, float(r["sync_end_ns"][-1])


def analyse(ranks: list[RankTimings], opts: BspOptions) -> Analysis:
    """The measured side and the simulator's predictions, as plain data."""
    # lazy: the simulator brings scipy (~0.5 s), and only rank 0 analyses
    from jitterscope.cluster import predict

    P = opts.phases
    compute = np.stack([r["compute_end_ns"] - r["compute_start_ns"] for r in ranks]).astype(float)  # N x P
    noise = np.stack([r["gap_ns"] for r in ranks]).astype(float)
    clean = compute - noise
    # The noise-free work each node's phase actually took (calibrations differ a
    # little); the ideal job waits for the longest.
    works = [float(w) for w in clean.mean(axis=1)]
    work_ns = max(works)
    sync_ns = float(np.median([r["sync_ns"] for r in ranks]))
    ends = np.stack([r["sync_end_ns"] for r in ranks]).astype(float)
    runtime_s = float(ends[:, -1].max()) / 1e9
    ideal_s = P * (work_ns + sync_ns) / 1e9
    phase_total = np.diff(np.concatenate([np.zeros((len(ranks), 1)), ends], axis=1), axis=1).mean(axis=0)
    slowest = compute.argmax(axis=0)
    measured: Measured = {
        "runtime_s": runtime_s,
        "ideal_s": ideal_s,
        "slowdown": runtime_s / ideal_s - 1,
        "phase_mean_ns": round(float(phase_total.mean()), 1),
        "phase_p99_ns": round(float(np.percentile(phase_total, 99)), 1),
        "phase_max_ns": round(float(phase_total.max()), 1),
        "work_target_ns": opts.phase_ns,
        "work_ns": round(work_ns, 1),
        "work_spread": round(max(works) / min(works) - 1, 5),
        "work_sd_ns": round(float(clean.std(axis=1).mean()), 1),
    }
    timelines = []
    for r in ranks:
        s, ln, span = timeline(r)
        timelines.append(Timeline(span, s, ln, label=node_key(r["host"], r["cpu"])))
    job = predict.bsp_job(len(ranks), P, work_ns, opts.sync, sync_ns, opts.replications, opts.seed)
    preds: dict[str, PredictionJson] = {}
    for key, fn in (
        ("trace_driven", lambda: predict.trace_driven(timelines, job, hosts=[r["real_host"] for r in ranks])),
        ("fitted", lambda: predict.fitted(timelines, job)),
        ("replay", lambda: predict.trace_driven(timelines, job, "recorded")),
        ("simulate", lambda: predict.trace_driven(timelines, job, "random")),
    ):
        try:
            p = fn()
        except (ValueError, RuntimeError, FloatingPointError) as err:
            preds[key] = {"error": str(err)}
            continue
        preds[key] = {
            "runtime_s": p.runtime_s,
            "ideal_s": p.ideal_s,
            "slowdown": p.slowdown,
            "ci95_s": p.ci95_s,
            "sd_s": p.sd_s,
            "slowdown_error": p.slowdown - measured["slowdown"],
            "runtime_rel_error": p.runtime_s / runtime_s - 1,
            **p.detail,
        }
    nodes: list[BspNode] = []
    for i, r in enumerate(ranks):
        nodes.append(
            {
                "node": node_key(r["host"], r["cpu"]),
                "host": r["host"],
                "cpu": r["cpu"],
                "rank": r["rank"],
                "compute_mean_ns": round(float(compute[i].mean()), 1),
                "work_ns": round(works[i], 1),
                "compute_max_ns": round(float(compute[i].max()), 1),
                "noise_mean_ns": round(float(noise[i].mean()), 1),
                "noise_ppm": round(float(noise[i].sum() / compute[i].sum() * 1e6), 3),
                "gaps": int(r["gaps"].sum()),
                "gaps_dropped": int(r["dropped"]),
                "slowest_share": round(float((slowest == i).mean()), 4),
                "sync_ns": round(float(r["sync_ns"]), 1),
            }
        )
    return {"measured": measured, "predictions": preds, "nodes": nodes, "work_ns": work_ns, "sync_ns": sync_ns}


def write_bsp_run(out: Path, ranks: list[RankTimings], opts: BspOptions, peers: list[dict[str, Any]]) -> None:
    result = analyse(ranks, opts)
    P = opts.phases
    rows: dict[str, list[Any]] = {
        k: [] for k in ("host", "cpu", "rank", "phase", "compute_ns", "noise_ns", "gaps", "phase_end_ns")
    }
    for r in ranks:
        rows["host"] += [r["host"]] * P
        rows["cpu"] += [int(r["cpu"])] * P
        rows["rank"] += [int(r["rank"])] * P
        rows["phase"] += list(range(P))
        rows["compute_ns"] += list(r["compute_end_ns"] - r["compute_start_ns"])
        rows["noise_ns"] += list(r["gap_ns"])
        rows["gaps"] += list(r["gaps"])
        rows["phase_end_ns"] += list(r["sync_end_ns"])
        layout.write_node_table(
            out,
            "detours",
            r["host"],
            r["cpu"],
            pa.table(
                {
                    "cpu": pa.array(np.full(len(r["gap_start_ns"]), r["cpu"]), pa.int32()),
                    "start_ns": pa.array(r["gap_start_ns"], pa.int64()),
                    "duration_ns": pa.array(r["gap_len_ns"], pa.int64()),
                }
            ),
        )
    phases = pa.table(
        {
            "host": pa.array(rows["host"], pa.string()),
            "cpu": pa.array(rows["cpu"], pa.int32()),
            "rank": pa.array(rows["rank"], pa.int32()),
            "phase": pa.array(rows["phase"], pa.int32()),
            "compute_ns": pa.array(rows["compute_ns"], pa.int64()),
            "noise_ns": pa.array(rows["noise_ns"], pa.int64()),
            "gaps": pa.array(rows["gaps"], pa.int64()),
            "phase_end_ns": pa.array(rows["phase_end_ns"], pa.int64()),
        }
    )
    with atomic_path(out / "bsp_phases.parquet") as tmp:
        pq.write_table(phases, tmp, compression="zstd")
    t0 = min(int(r["start_unix_ns"]) for r in ranks)
    node_meta = [
        {
            "node": node_key(r["host"], r["cpu"]),
            "host": r["host"],
            "cpu": r["cpu"],
            "rank": r["rank"],
            "real_host": r["real_host"],
            "kernel": r["kernel"],
            "tsc_hz": r["tsc_hz"],
            "iterations": r["iterations"],
            "cycles_per_iter": r["cycles_per_iter"],
            "offset_ns": int(r["start_unix_ns"]) - t0,
            "partition": layout.partition(r["host"], r["cpu"]),
        }
        for r in ranks
    ]
    m = result["measured"]
    meta = base_meta(
        kind="cluster",
        mode="bsp",
        id=out.name,
        host=ranks[0]["host"],
        kernel=ranks[0]["kernel"],
        command_line=opts.command_line,
        start=datetime.fromtimestamp(t0 / 1e9, timezone.utc).isoformat(timespec="seconds"),
        start_unix_ns=t0,
        duration_s=m["runtime_s"],
        interrupted=False,
        cpus=sorted({int(r["cpu"]) for r in ranks}),
        cpu_model=sysinfo.cpu_model(),
        virtualization=sysinfo.virtualization(),
        options={
            "phase_ns": opts.phase_ns,
            "phases": P,
            "sync": opts.sync,
            "threshold_ns": opts.threshold_ns,
            "cpu_map": opts.cpu_map,
            "timeout_s": opts.timeout_s,
            "replications": opts.replications,
            "priority": opts.priority,
            "seed": opts.seed,
        },
        tracing={"enabled": False, "reason": "cluster bsp records the work loop's own gaps, no kernel trace"},
        lost_events=0,
        nodes=node_meta,
        cluster={
            "ranks": len(ranks),
            "hosts": sorted({r["host"] for r in ranks}),
            "real_hosts": sorted({p["real_host"] for p in peers}),
            "cpu_choice": "--cpu-map" if opts.cpu_map else "local rank r -> online CPU (r+1) mod n",
        },
        submitted_from=socket.gethostname(),
    )
    write_json(out / "meta.json", meta)
    summary: BspSummary = {
        "run": {
            "id": out.name,
            "kind": "cluster",
            "mode": "bsp",
            "nodes": len(ranks),
            "phases": P,
            "phase_ns": opts.phase_ns,
            "work_ns": round(result["work_ns"], 1),
            "sync": opts.sync,
            "sync_ns": round(result["sync_ns"], 1),
            "threshold_ns": opts.threshold_ns,
        },
        "measured": m,
        "predictions": result["predictions"],
        "nodes": result["nodes"],
    }
    write_json(out / "summary.json", summary)


__all__ = ["BspOptions", "bsp_rank", "analyse", "timeline", "JitterscopeError"]
