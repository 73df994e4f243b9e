"""The monitor's state as Prometheus metrics: a custom collector for prometheus_client.

Per-window values are gauges of the latest window; counters run since start.
Sources use compare's identity (kworker ids folded to kworker/N:*) and only
the top ones are exported, so label sets stay bounded over a long run.
prometheus_client writes the exposition format (escaping, content negotiation,
OpenMetrics when a scraper asks for it); the metric names are documented in
docs/commands/monitor.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from prometheus_client.exposition import generate_latest

from jitterscope.compare.sample import source_key

TOP_SOURCES = 30


@dataclass
class MonitorState:
    windows_total: int = 0
    failures_total: int = 0
    lost_events_total: int = 0
    regressions: int = 0
    window_s: float = 0.0
    interval_s: float = 0.0
    last_end_unix: float = 0.0
    last: dict[str, Any] | None = None  # summary.json of the latest window
    sources: list[dict[str, Any]] = field(default_factory=list)  # [{kind, name, total_ns, count}]


def _gauge(
    name: str,
    help_: str,
    value: float | None = None,
    labels: tuple[str, ...] = (),
    samples: list[tuple[list[str], float]] | None = None,
) -> GaugeMetricFamily:
    g = GaugeMetricFamily(name, help_, value=value, labels=list(labels) if labels else None)
    for label_values, v in samples or []:
        g.add_metric(label_values, v)
    return g


class MonitorCollector:
    """Yields the metrics of `state()`, read once per scrape (the monitor swaps in a new state
    object after each window, so one scrape never mixes two windows)."""

    def __init__(self, state: Callable[[], MonitorState]) -> None:
        self._state = state

    def collect(self) -> Iterator[Metric]:
        st = self._state()
        yield CounterMetricFamily("jitterscope_windows_total", "Measurement windows completed.", value=st.windows_total)
        yield CounterMetricFamily(
            "jitterscope_window_failures_total", "Measurement windows that failed.", value=st.failures_total
        )
        yield CounterMetricFamily(
            "jitterscope_lost_events_total", "Kernel trace events lost, all windows.", value=st.lost_events_total
        )
        yield _gauge("jitterscope_window_seconds", "Length of each measurement window.", st.window_s)
        yield _gauge("jitterscope_interval_seconds", "Time between window starts.", st.interval_s)
        yield _gauge(
            "jitterscope_regressed_sources",
            "Sources (and CPU totals) currently new or significantly worse than the baseline.",
            st.regressions,
        )
        s = st.last
        if s is None:
            return
        cpus = sorted((s.get("cpus") or {}).items(), key=lambda kv: int(kv[0]))
        yield _gauge("jitterscope_last_window_end_seconds", "Unix time the latest window ended.", st.last_end_unix)
        yield _gauge(
            "jitterscope_noise_ppm",
            "Noise in the latest window: detour time per measured time, ppm.",
            labels=("cpu",),
            samples=[([c], v.get("noise_ppm", 0.0)) for c, v in cpus],
        )
        yield _gauge(
            "jitterscope_detours",
            "Detours in the latest window.",
            labels=("cpu",),
            samples=[([c], v.get("detours", 0)) for c, v in cpus],
        )
        yield _gauge(
            "jitterscope_max_detour_ns",
            "Longest detour in the latest window, ns.",
            labels=("cpu",),
            samples=[([c], v.get("max_ns", 0)) for c, v in cpus],
        )
        yield _gauge(
            "jitterscope_lost_events", "Kernel trace events lost in the latest window.", s.get("lost_events", 0)
        )
        yield _gauge(
            "jitterscope_unexplained_share",
            "Share of the latest window's noise no traced activity explains (0-1).",
            (s.get("unexplained") or {}).get("share", 0.0),
        )
        top = st.sources[:TOP_SOURCES]
        yield _gauge(
            "jitterscope_source_noise_ns",
            "Time a source took inside detours in the latest window, ns.",
            labels=("kind", "name"),
            samples=[([x["kind"], x["name"]], x["total_ns"]) for x in top],
        )
        yield _gauge(
            "jitterscope_source_detours",
            "Detours a source appeared in, latest window.",
            labels=("kind", "name"),
            samples=[([x["kind"], x["name"]], x["count"]) for x in top],
        )


def registry_for(state: Callable[[], MonitorState]) -> CollectorRegistry:
    """A registry holding only the monitor's metrics (no process or platform collectors)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(MonitorCollector(state))
    return reg


def render_metrics(st: MonitorState) -> str:
    """The text exposition (format 0.0.4) of `st`, as a scrape sees it."""
    return generate_latest(registry_for(lambda: st)).decode("utf-8")


def source_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The latest window's sources keyed as compare keys them (kworker ids folded)."""
    agg: dict[tuple[str, str], dict[str, Any]] = {}
    for x in summary.get("sources") or []:
        k = source_key(x["kind"], x["name"])
        row = agg.setdefault(k, {"kind": k[0], "name": k[1], "total_ns": 0, "count": 0})
        row["total_ns"] += int(x["total_ns"])
        row["count"] += int(x["count"])
    un = summary.get("unexplained") or {}
    if un.get("count"):
        agg[("unexplained", "unexplained")] = {
            "kind": "unexplained",
            "name": "unexplained",
            "total_ns": int(un.get("total_ns", 0)),
            "count": int(un["count"]),
        }
    return sorted(agg.values(), key=lambda r: -r["total_ns"])
