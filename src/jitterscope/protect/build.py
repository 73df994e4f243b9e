"""Raw controller records -> the protect run's tables and summary.json.

Tables (docs/run-format.md, "protect runs"):
  samples      every sampling decision: cpu, t_ns, window_ns (the actual Ts), protected, read/write bytes
               the signal saw, progress_bytes and cpu_ns of the best-effort programs since the previous
               sample, metric, pressure (signal / threshold), suspend_ns (the law's decision), flags
  suspensions  every suspension: cpu, t_ns, requested_ns, actual_ns, stop_latency_ns (decision to the
               programs' last progress; null when they publish nothing), issue_ns, resume_ns, clipped, confirmed
  iterations   every heartbeat of the critical program: t_ns, latency_ns, seq, protected

Summary: per phase (protected / unprotected, the latter with --compare) the critical
latency (mean, sd, p50, p99, max, deadline misses) and the best-effort progress
(bytes/s, CPU share, duty cycle achieved), their ratio, and per best-effort CPU the
sampling period distribution, suspensions, stop latency and the controller's own CPU share.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from jitterscope.protect import records as rec
from jitterscope.protect.delivery import delivery
from jitterscope.protect.results import (
    ControllerEnd,
    CpuRow,
    Dist,
    EventBudget,
    Latency,
    Options,
    Phase,
    ProgramInfo,
    Summary,
)
from jitterscope.protect.schema import ITERATIONS, SAMPLES, SUSPENSIONS
from jitterscope.rundir import write_json, write_table


def phase_on(t_ns: np.ndarray, phase_ns: float | None) -> np.ndarray:
    """Protection active at each time: always, or (with --compare) every other phase, starting off."""
    if not phase_ns:
        return np.ones(len(t_ns), dtype=bool)
    return (np.maximum(t_ns, 0) // int(phase_ns)) % 2 == 1


def _nullable(a: np.ndarray, missing: int) -> pa.Array:
    return pa.array(a, mask=a == missing, type=pa.int64())


def tables(recs: dict[str, np.ndarray], phase_ns: float | None) -> dict[str, pa.Table]:
    s, x, b = recs["samples"], recs["suspensions"], recs["beats"]
    samples = pa.table(
        {
            "cpu": s["cpu"].astype(np.int32),
            "t_ns": s["t_ns"],
            "window_ns": s["window_ns"],
            "protected": (s["flags"] & rec.S_ON) != 0,
            "read_bytes": s["read_bytes"],
            "write_bytes": s["write_bytes"],
            "progress_bytes": _nullable(s["progress_bytes"], -1),
            "cpu_ns": _nullable(s["cpu_ns"], -1),
            "metric": _nullable(s["metric"], -1) if len(s) else pa.array([], pa.int64()),
            "pressure": s["pressure_ppm"] / 1e6,
            "suspend_ns": s["suspend_ns"],
            "flags": s["flags"].astype(np.int32),
        },
        schema=SAMPLES,
    )
    suspensions = pa.table(
        {
            "cpu": x["cpu"].astype(np.int32),
            "t_ns": x["t_ns"],
            "requested_ns": x["requested_ns"],
            "actual_ns": x["end_ns"] - x["t_ns"],
            "stop_latency_ns": _nullable(x["stopped_ns"], rec.STOP_UNKNOWN),
            "issue_ns": x["issue_ns"],
            "resume_ns": x["resumed_ns"] - x["end_ns"],
            "clipped": (x["flags"] & rec.X_CLIPPED) != 0,
            "confirmed": (x["flags"] & rec.X_UNCONFIRMED) == 0,
        },
        schema=SUSPENSIONS,
    )
    iterations = pa.table(
        {"t_ns": b["t_ns"], "latency_ns": b["latency_ns"], "seq": b["seq"], "protected": phase_on(b["t_ns"], phase_ns)},
        schema=ITERATIONS,
    )
    return {"samples": samples, "suspensions": suspensions, "iterations": iterations}


def dist(v: np.ndarray) -> Dist | None:
    """p50/p99/max (and mean) of a sample, or None when empty."""
    if len(v) == 0:
        return None
    v = v.astype(np.float64)
    return {
        "mean": float(v.mean()),
        "p50": float(np.percentile(v, 50)),
        "p99": float(np.percentile(v, 99)),
        "max": float(v.max()),
    }


def latency(v: np.ndarray, deadline_ns: float | None) -> Latency | None:
    """The critical program's latency (ns): mean ± sd, p50, p99, max, deadline misses."""
    if len(v) == 0:
        return None
    v = v.astype(np.float64)
    return {
        "count": len(v),
        "mean_ns": float(v.mean()),
        "sd_ns": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
        "p50_ns": float(np.percentile(v, 50)),
        "p99_ns": float(np.percentile(v, 99)),
        "max_ns": float(v.max()),
        "deadline_misses": int(np.count_nonzero(v > deadline_ns)) if deadline_ns else None,
    }


def _phase_seconds(duration_ns: float, phase_ns: float | None, on: bool) -> float:
    if not phase_ns:
        return duration_ns / 1e9 if on else 0.0
    full, rest = divmod(duration_ns, phase_ns)
    n_on = full // 2 + (rest if full % 2 == 1 else 0) / phase_ns
    total_on = n_on * phase_ns
    return (total_on if on else duration_ns - total_on) / 1e9


def phase(
    recs: dict[str, np.ndarray],
    on: bool,
    seconds: float,
    deadline_ns: float | None,
    n_cpus: int,
    phase_ns: float | None,
) -> Phase:
    """One phase (protected or not): the critical latency and what the best-effort programs got."""
    s, x = recs["samples"], recs["suspensions"]
    sel = ((s["flags"] & rec.S_ON) != 0) == on
    beats = recs["beats"]
    bsel = beats["latency_ns"][phase_on(beats["t_ns"], phase_ns) == on]
    prog = s["progress_bytes"][sel]
    cpu = s["cpu_ns"][sel]
    suspended = float((x["end_ns"] - x["t_ns"]).sum()) / 1e9 if on else 0.0
    per_cpu_s = seconds * n_cpus
    return {
        "seconds": seconds,
        "critical": latency(bsel, deadline_ns),
        "best_effort": {
            "progress_bytes_per_s": float(prog[prog >= 0].sum()) / seconds if seconds and (prog >= 0).any() else None,
            "cpu_share": float(cpu[cpu >= 0].sum()) / 1e9 / per_cpu_s if per_cpu_s and (cpu >= 0).any() else None,
            "duty": 1.0 - suspended / per_cpu_s if per_cpu_s else None,
            "samples": int(sel.sum()),
            "over": int(np.count_nonzero(s["pressure_ppm"][sel] >= 1_000_000)),
        },
    }


def per_cpu(
    recs: dict[str, np.ndarray], end: ControllerEnd, duration_s: float, protected_s: float
) -> dict[str, CpuRow]:
    s, x = recs["samples"], recs["suspensions"]
    ends = {int(u["cpu"]): u for u in end.get("units", [])}
    out: dict[str, CpuRow] = {}
    for cpu in sorted({int(c) for c in s["cpu"]} | set(ends)):
        ss, xx, u = s[s["cpu"] == cpu], x[x["cpu"] == cpu], ends.get(cpu)
        stop = xx["stopped_ns"][xx["stopped_ns"] != rec.STOP_UNKNOWN]
        spin, thread = (float(u.get("spin_ns", 0)), float(u.get("thread_cpu_ns", 0))) if u else (0.0, 0.0)
        out[str(cpu)] = {
            "samples": len(ss),
            "over": int(np.count_nonzero(ss["pressure_ppm"] >= 1_000_000)),
            # the share of the protected time this CPU's best-effort work was not suspended
            "duty": 1.0 - float((xx["end_ns"] - xx["t_ns"]).sum()) / 1e9 / protected_s if protected_s else None,
            "suspensions": len(xx),
            "clipped": int(np.count_nonzero(xx["flags"] & rec.X_CLIPPED)),
            "unconfirmed": int(np.count_nonzero(xx["flags"] & rec.X_UNCONFIRMED)),
            "dropped": int(u.get("dropped", 0)) if u else 0,
            "sampling_ns": dist(ss["window_ns"]),
            "suspension_ns": dist(xx["end_ns"] - xx["t_ns"]),
            "stop_latency_ns": dist(stop),
            "issue_ns": dist(xx["issue_ns"]),
            "resume_ns": dist(xx["resumed_ns"] - xx["end_ns"]),
            "controller_cpu_share": max(0.0, thread - spin) / 1e9 / duration_s if duration_s and thread else None,
            "spin_share": spin / 1e9 / duration_s if duration_s and spin else 0.0,
        }
    return out


def _event_budget(opts: Options, end: ControllerEnd) -> EventBudget | None:
    """What each counter overflowed at (--sampling event): LLC lines per direction, or task-clock ns."""
    b = end.get("event_budget")
    if opts.get("sampling") != "event" or not b:
        return None
    if opts["signal"] == "pmu":
        return {"unit": "LLC lines", "read": b[0] or None, "write": b[1] or None}
    return {"unit": "ns of CPU time", "cpu_ns": b[0]}


def _expected_share(opts: Options, end: ControllerEnd) -> float | None:
    """The best-effort share under persistent excess: Ts/(Ts+S) with a timer; with event-based sampling
    on CPU time budget/(budget+S) (it runs its budget, then S); on LLC lines it depends on the rate (None)."""
    budget = _event_budget(opts, end)
    if budget is None:
        return float(opts["sample_ns"] / (opts["sample_ns"] + opts["suspend_ns"]))
    if "cpu_ns" in budget:
        return float(budget["cpu_ns"] / (budget["cpu_ns"] + opts["suspend_ns"]))
    return None


def _critical_source(programs: list[ProgramInfo], beats: int) -> str:
    """Where the critical latency comes from, or why there is none (never silently absent)."""
    if not any(p["role"] == "critical" for p in programs):
        return "no critical program was given"
    if beats:
        return "heartbeats the critical program published (report API)"
    return (
        "unknown: the critical program published no heartbeats (it must use the report API: "
        "js_report.h or jitterscope.protect.report, the page named by $JITTERSCOPE_REPORT; "
        "or give --critical-page for a --critical PID)"
    )


def summarize(recs: dict[str, np.ndarray], header: rec.Header, meta: dict[str, Any]) -> Summary:
    opts: Options = meta["options"]
    phase_ns = opts.get("compare_ns")
    duration_ns = meta["duration_s"] * 1e9
    deadline = opts.get("deadline_ns")
    n = max(1, len(meta["cpus"]))
    phases = {"protected": phase(recs, True, _phase_seconds(duration_ns, phase_ns, True), deadline, n, phase_ns)}
    ratio = None
    if phase_ns:
        phases["unprotected"] = phase(recs, False, _phase_seconds(duration_ns, phase_ns, False), deadline, n, phase_ns)
        on, off = phases["protected"]["best_effort"], phases["unprotected"]["best_effort"]
        got: float | None
        had: float | None
        if on["progress_bytes_per_s"] and off["progress_bytes_per_s"]:
            got, had = on["progress_bytes_per_s"], off["progress_bytes_per_s"]
        else:
            got, had = on["cpu_share"], off["cpu_share"]
        ratio = got / had if got is not None and had else None
    end = meta.get("controller", {})
    out: Summary = {
        "run": {
            "id": meta["id"],
            "duration_s": meta["duration_s"],
            "interrupted": meta["interrupted"],
            "complete": bool(header["complete"]),
            "ended_by": meta.get("ended_by", ""),
        },
        "signal": opts["signal"],
        "actuator": opts["actuator"],
        "law": opts["law"],
        "sampling": opts.get("sampling", "timer"),
        "event_budget": _event_budget(opts, end),
        "sample_ns": opts["sample_ns"],
        "suspend_ns": opts["suspend_ns"],
        "threshold": opts.get("threshold", {}),
        "expected_share": _expected_share(opts, end),
        "phases": phases,
        "progress_ratio": ratio,
        "critical": latency(recs["beats"]["latency_ns"], deadline),
        "critical_latency": _critical_source(meta.get("programs", []), len(recs["beats"])),
        "cpus": per_cpu(recs, end, meta["duration_s"], phases["protected"]["seconds"]),
        "controller": {
            "records": int(header["records_in_file"]),
            "dropped": int(header["dropped"]),
            "beats_lost": int(header["beats_lost"]),
            "writer_cpu_share": end.get("writer_cpu_ns", 0) / 1e9 / meta["duration_s"] if meta["duration_s"] else 0.0,
        },
        "delivery": None,
    }
    out["delivery"] = delivery(out, recs["samples"], phase_ns)
    return out


def build(run_dir: Path, meta: dict[str, Any], raw: Path) -> Summary:
    """Write the tables and summary.json (meta.json last: a run without it is not a run)."""
    header, recs = rec.read_records(raw)
    for name, table in tables(recs, meta["options"].get("compare_ns")).items():
        write_table(run_dir, name, table, kind="protect")
    summary = summarize(recs, header, meta)
    write_json(run_dir / "summary.json", summary)
    write_json(run_dir / "meta.json", meta)
    return summary
