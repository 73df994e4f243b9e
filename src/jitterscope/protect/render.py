"""The terminal summary of a protect run (summary.json in, text out)."""

from __future__ import annotations

from typing import Any

from jitterscope.protect.results import Dist, Latency, Summary
from jitterscope.units import format_ns


def _bw(v: float | None) -> str:
    if v is None:
        return "-"
    for unit, f in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if abs(v) >= f:
            return f"{v / f:.3g} {unit}"
    return f"{v:.0f} B/s"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.1f}%"


def _lat(c: Latency | None, key: str) -> str:
    if not c:
        return "-"
    if key == "mean":
        return f"{format_ns(c['mean_ns'])} ± {format_ns(c['sd_ns'])}"
    if key == "misses":
        return "-" if c["deadline_misses"] is None else f"{c['deadline_misses']:,} of {c['count']:,}"
    return format_ns({"p50": c["p50_ns"], "p99": c["p99_ns"], "max": c["max_ns"]}[key])


def _dist(d: Dist | None) -> str:
    return "-" if not d else f"p50 {format_ns(d['p50'])}, p99 {format_ns(d['p99'])}, max {format_ns(d['max'])}"


def _sampling(summary: Summary) -> str:
    b = summary.get("event_budget")
    if not b:
        return ""
    if "cpu_ns" in b:
        return f" · event-sampled: overflow at {format_ns(b['cpu_ns'])} CPU time"
    return " · event-sampled: overflow at " + ", ".join(f"{b[k]:,} {k} lines" for k in ("read", "write") if b[k])


def render(summary: Summary, meta: dict[str, Any], run_dir: str) -> str:
    o = meta["options"]
    phases = summary["phases"]
    cols = [k for k in ("unprotected", "protected") if k in phases]
    head = (
        f"protect: best-effort CPU {','.join(map(str, meta['cpus']))}, critical CPU "
        f"{','.join(map(str, meta['critical_cpus']))} · signal {summary['signal']} · actuator "
        f"{summary['actuator']} · law {summary['law']} {format_ns(summary['sample_ns'])}/"
        f"{format_ns(summary['suspend_ns'])}{_sampling(summary)} · {format_ns(summary['run']['duration_s'] * 1e9)}"
        + (" (interrupted)" if summary["run"]["interrupted"] else "")
    )
    lines = [head, f"  signal: {o.get('signal_reason')}; threshold {o['threshold'].get('text') or '-'}"]
    rows: list[tuple[str, list[str]]] = [
        ("critical latency mean", [_lat(phases[c]["critical"], "mean") for c in cols]),
        ("                 p99", [_lat(phases[c]["critical"], "p99") for c in cols]),
        ("                 max", [_lat(phases[c]["critical"], "max") for c in cols]),
        ("   deadline misses", [_lat(phases[c]["critical"], "misses") for c in cols]),
        ("best-effort progress", [_bw(phases[c]["best_effort"]["progress_bytes_per_s"]) for c in cols]),
        ("            CPU share", [_pct(phases[c]["best_effort"]["cpu_share"]) for c in cols]),
        ("            duty cycle", [_pct(phases[c]["best_effort"]["duty"]) for c in cols]),
    ]
    rows = [(name, vals) for name, vals in rows if any(v != "-" for v in vals)]  # nothing to show: no row
    width = max([22, *(len(v) for _, vals in rows for v in vals)]) + 2  # no rows: a run killed at its start
    lines.append(f"  {'':22}" + "".join(f"{c:>{width}}" for c in cols))
    lines += [f"  {name:22}" + "".join(f"{v:>{width}}" for v in vals) for name, vals in rows]
    if summary.get("progress_ratio") is not None:
        share = summary.get("expected_share")
        d = summary.get("delivery")
        ci = d["ratio_ci"] if d else None
        lines.append(
            f"  best-effort progress when protected: {summary['progress_ratio']:.3f} of unprotected"
            + (f" ({d['ratio_ci_level']:.0%} interval {ci[0]:.3f}-{ci[1]:.3f})" if d and ci else "")
            + (f" (the law's share under persistent excess: {share:.3f})" if share is not None else "")
        )
        if d and d["note"]:
            lines.append(f"  WARNING: {d['note']}")
    if summary.get("critical") is None and (summary.get("critical_latency") or "").startswith("unknown"):
        lines.append(f"  critical latency {summary['critical_latency']}")
    window = "windows" if summary.get("sampling") == "event" else "Ts"
    for cpu, c in summary["cpus"].items():
        lines.append(
            f"  CPU {cpu}: {c['samples']:,} samples ({window} {_dist(c['sampling_ns'])}), "
            f"{c['suspensions']:,} suspensions (S {_dist(c['suspension_ns'])}), duty {_pct(c.get('duty'))}"
        )
        parts = [f"stop latency {_dist(c['stop_latency_ns'])}"] if c["stop_latency_ns"] else []
        if c["controller_cpu_share"] is not None:
            parts.append(
                f"controller {_pct(c['controller_cpu_share'])} CPU"
                + (f" + {_pct(c['spin_share'])} spinning" if c["spin_share"] else "")
            )
        if c["clipped"]:
            parts.append(f"{c['clipped']:,} clipped to the RT budget")
        if c["unconfirmed"]:
            parts.append(f"{c['unconfirmed']:,} not confirmed by the freezer")
        if parts:
            lines.append("         " + "; ".join(parts))
    ctl = summary["controller"]
    if ctl["dropped"] or ctl["beats_lost"]:
        lines.append(f"  warning: {ctl['dropped']:,} records dropped, {ctl['beats_lost']:,} heartbeats lost")
    if not summary["run"]["complete"]:
        lines.append(f"  warning: the controller did not finish its records ({meta.get('controller_error')})")
    if "unprotected" not in phases and summary.get("critical"):
        lines.append("  (add --compare 1s to see the same programs unprotected, interleaved)")
    lines.append(f"  run: {run_dir}  (ended: {summary['run']['ended_by']})")
    return "\n".join(lines)
