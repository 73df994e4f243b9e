"""Prometheus text exposition (format 0.0.4) of the monitor's state.

Per-window values are gauges of the latest window; counters run since start.
Sources use compare's identity (kworker ids folded to kworker/N:*) and only
the top ones are exported, so label sets stay bounded over a long run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TOP_SOURCES = 30


def _esc(v: Any) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**kv: Any) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in kv.items()) + "}" if kv else ""


@dataclass
class MonitorState:
    windows_total: int = 0
    failures_total: int = 0
    lost_events_total: int = 0
    regressions: int = 0
    window_s: float = 0.0
    interval_s: float = 0.0
    last_end_unix: float = 0.0
    last: dict[str, Any] | None = None            # summary.json of the latest window
    sources: list[dict[str, Any]] = field(default_factory=list)  # [{kind, name, total_ns, count}]


def render_metrics(st: MonitorState) -> str:
    out: list[str] = []

    def metric(name: str, kind: str, help_: str, samples: list[tuple[dict[str, Any], float]]) -> None:
        out.append(f"# HELP {name} {help_}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            out.append(f"{name}{_labels(**labels)} {value:.10g}")

    metric("jitterscope_windows_total", "counter", "Measurement windows completed.", [({}, st.windows_total)])
    metric("jitterscope_window_failures_total", "counter", "Measurement windows that failed.",
           [({}, st.failures_total)])
    metric("jitterscope_lost_events_total", "counter", "Kernel trace events lost, all windows.",
           [({}, st.lost_events_total)])
    metric("jitterscope_window_seconds", "gauge", "Length of each measurement window.", [({}, st.window_s)])
    metric("jitterscope_interval_seconds", "gauge", "Time between window starts.", [({}, st.interval_s)])
    metric("jitterscope_regressed_sources", "gauge",
           "Sources (and CPU totals) currently new or significantly worse than the baseline.", [({}, st.regressions)])
    s = st.last
    if s is not None:
        cpus = s.get("cpus", {})
        metric("jitterscope_last_window_end_seconds", "gauge", "Unix time the latest window ended.",
               [({}, st.last_end_unix)])
        metric("jitterscope_noise_ppm", "gauge", "Noise in the latest window: detour time per measured time, ppm.",
               [({"cpu": c}, v.get("noise_ppm", 0.0)) for c, v in cpus.items()])
        metric("jitterscope_detours", "gauge", "Detours in the latest window.",
               [({"cpu": c}, v.get("detours", 0)) for c, v in cpus.items()])
        metric("jitterscope_max_detour_ns", "gauge", "Longest detour in the latest window, ns.",
               [({"cpu": c}, v.get("max_ns", 0)) for c, v in cpus.items()])
        metric("jitterscope_lost_events", "gauge", "Kernel trace events lost in the latest window.",
               [({}, s.get("lost_events", 0))])
        metric("jitterscope_unexplained_share", "gauge",
               "Share of the latest window's noise no traced activity explains (0-1).",
               [({}, (s.get("unexplained") or {}).get("share", 0.0))])
        top = st.sources[:TOP_SOURCES]
        metric("jitterscope_source_noise_ns", "gauge", "Time a source took inside detours in the latest window, ns.",
               [({"kind": x["kind"], "name": x["name"]}, x["total_ns"]) for x in top])
        metric("jitterscope_source_detours", "gauge", "Detours a source appeared in, latest window.",
               [({"kind": x["kind"], "name": x["name"]}, x["count"]) for x in top])
    return "\n".join(out) + "\n"


def source_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The latest window's sources keyed as compare keys them (kworker ids folded)."""
    from jitterscope.compare.sample import source_key

    agg: dict[tuple[str, str], dict[str, Any]] = {}
    for x in summary.get("sources") or []:
        k = source_key(x["kind"], x["name"])
        row = agg.setdefault(k, {"kind": k[0], "name": k[1], "total_ns": 0, "count": 0})
        row["total_ns"] += int(x["total_ns"])
        row["count"] += int(x["count"])
    un = summary.get("unexplained") or {}
    if un.get("count"):
        agg[("unexplained", "unexplained")] = {"kind": "unexplained", "name": "unexplained",
                                               "total_ns": int(un.get("total_ns", 0)), "count": int(un["count"])}
    return sorted(agg.values(), key=lambda r: -r["total_ns"])
