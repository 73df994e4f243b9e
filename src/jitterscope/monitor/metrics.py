"""The monitor's state as Prometheus metrics: a custom collector for prometheus_client.

Per-window values are gauges of the latest window; counters run since start.
Per-source series are per CPU, under the bounded labels of labels.py (a source
is its command; at most --max-sources names at once, the rest `(other)`).
prometheus_client writes the exposition format (escaping, content negotiation,
OpenMetrics when a scraper asks for it); the metric names are documented in
docs/commands/monitor.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from prometheus_client.exposition import generate_latest

from jitterscope.monitor.labels import KINDS
from jitterscope.monitor.sources import CpuSource
from jitterscope.rundir import Run


@dataclass(frozen=True)
class WindowCpu:
    noise_ppm: float
    detours: int
    max_ns: float


@dataclass(frozen=True)
class LastWindow:
    """What the gauges show of the latest window's summary.json."""

    cpus: dict[str, WindowCpu]  # by CPU number, in CPU order
    lost_events: int
    unexplained_share: float

    @classmethod
    def of(cls, run: Run) -> LastWindow:
        s = run.summary
        cpus = sorted((s.get("cpus") or {}).items(), key=lambda kv: int(kv[0]))
        return cls(
            {
                c: WindowCpu(float(v.get("noise_ppm", 0.0)), int(v.get("detours", 0)), float(v.get("max_ns", 0)))
                for c, v in cpus
            },
            int(s.get("lost_events", 0) or 0),
            float((s.get("unexplained") or {}).get("share", 0.0)),
        )


@dataclass
class MonitorState:
    windows_total: int = 0
    failures_total: int = 0
    lost_events_total: int = 0
    regressions: int = 0
    window_s: float = 0.0
    interval_s: float = 0.0
    last_end_unix: float = 0.0
    last: LastWindow | None = None
    sources: list[CpuSource] = field(default_factory=list)  # the latest window's, per CPU, labelled
    changes: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, name, "new" / "worse"), labelled
    folded_total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))


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
        yield _gauge("jitterscope_last_window_end_seconds", "Unix time the latest window ended.", st.last_end_unix)
        yield _gauge(
            "jitterscope_noise_ppm",
            "Noise in the latest window: detour time per measured time, ppm.",
            labels=("cpu",),
            samples=[([c], v.noise_ppm) for c, v in s.cpus.items()],
        )
        yield _gauge(
            "jitterscope_detours",
            "Detours in the latest window.",
            labels=("cpu",),
            samples=[([c], v.detours) for c, v in s.cpus.items()],
        )
        yield _gauge(
            "jitterscope_max_detour_ns",
            "Longest detour in the latest window, ns.",
            labels=("cpu",),
            samples=[([c], v.max_ns) for c, v in s.cpus.items()],
        )
        yield _gauge("jitterscope_lost_events", "Kernel trace events lost in the latest window.", s.lost_events)
        yield _gauge(
            "jitterscope_unexplained_share",
            "Share of the latest window's noise no traced activity explains (0-1).",
            s.unexplained_share,
        )
        yield from _source_metrics(st)


_PER_SOURCE: list[tuple[str, str, Callable[[CpuSource], float | None]]] = [
    (
        "jitterscope_source_noise_ns",
        "Time a source took inside detours on a CPU, latest window, ns.",
        lambda x: x.total_ns,
    ),
    ("jitterscope_source_detours", "Detours on a CPU a source took time in, latest window.", lambda x: x.detours),
    (
        "jitterscope_source_share",
        "Fraction (0-1) of a CPU's measured time a source took, latest window (busy/period for a daemon).",
        lambda x: x.share,
    ),
    (
        "jitterscope_source_rate_hz",
        "Times a source ran inside detours per second on a CPU, latest window (1/period for a daemon).",
        lambda x: x.rate_hz,
    ),
    (
        "jitterscope_source_period_seconds",
        "Recurrence period of a source on a CPU, latest window; absent when it is not regular.",
        lambda x: x.period_s,
    ),
    (
        "jitterscope_source_max_ns",
        "Longest time a source took in one detour on a CPU, latest window, ns.",
        lambda x: x.max_ns,
    ),
]


def _source_metrics(st: MonitorState) -> Iterator[Metric]:
    labels = ("cpu", "kind", "name")
    for name, help_, value in _PER_SOURCE:
        rows = [(x, value(x)) for x in st.sources]
        yield _gauge(
            name, help_, labels=labels, samples=[([str(x.cpu), x.kind, x.name], v) for x, v in rows if v is not None]
        )
    regressed: dict[tuple[str, str, str], int] = {}
    for k in st.changes:  # several sources folded into one label count together
        regressed[k] = regressed.get(k, 0) + 1
    yield _gauge(
        "jitterscope_source_regression",
        "Sources new (change=new) or significantly worse (change=worse) than the baseline now.",
        labels=("kind", "name", "change"),
        samples=[(list(k), v) for k, v in sorted(regressed.items())],
    )
    folded = CounterMetricFamily(
        "jitterscope_sources_folded",
        'Sources folded into name="(other)" because --max-sources names held labels (one per source and window).',
        labels=["kind"],
    )
    for kind, n in sorted(st.folded_total.items()):
        folded.add_metric([kind], n)
    yield folded


def registry_for(state: Callable[[], MonitorState]) -> CollectorRegistry:
    """A registry holding only the monitor's metrics (no process or platform collectors)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(MonitorCollector(state))
    return reg


def render_metrics(st: MonitorState) -> str:
    """The text exposition (format 0.0.4) of `st`, as a scrape sees it."""
    return generate_latest(registry_for(lambda: st)).decode("utf-8")
