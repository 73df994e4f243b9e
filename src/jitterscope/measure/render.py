"""Render a run's summary for the terminal: reads at a glance, details after."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jitterscope.humanize import count, number, seconds
from jitterscope.humanize import duration_ns as format_ns
from jitterscope.units import format_cpulist

if TYPE_CHECKING:
    from jitterscope.measure.inject import Injected

TOP_SOURCES = 10
TOP_CHAINS = 5
TOP_QUIET = 6


def _rate(per_s: float | None) -> str:
    """A rate per CPU-second; '-' when the run did not count it (written before events were counted)."""
    return "-" if per_s is None else f"{per_s:.4g}"


def _period(p: float | None) -> str:
    if p is None:
        return "-"
    return format_ns(p * 1e9)


def render_summary(summary: dict[str, Any], run_dir: str | None = None, meta: dict[str, Any] | None = None) -> str:
    run = summary["run"]
    lines = []
    tracing = "tracing on" if run["tracing"] else "tracing OFF"
    lost = summary.get("lost_events", 0)
    head = (
        f"{run['host']} ({run['kernel']}): {seconds(run['duration_s'])} on CPU "
        f"{format_cpulist(run['cpus'])}, threshold {format_ns(run['threshold_ns'])}, {tracing}"
    )
    lines.append(head)
    if meta and meta.get("interrupted"):
        lines.append("  (ended early: the run covers the time measured)")
    if run["tracing"]:
        lines.append(
            f"  lost kernel events: {number(lost)}"
            + ("  <- attribution is incomplete; try a larger --buffer" if lost else "")
        )
    if meta and meta.get("probe_dropped"):
        lines.append(f"  probe records dropped: {number(meta['probe_dropped'])} (detours missing from the tables)")
    lines.append("")
    lines.append(f"{'CPU':>4}  {'noise':>10}  {'ppm':>10}  {'detours':>8}  {'p99':>9}  {'max':>9}  {'resolution':>10}")
    for cpu, c in summary["cpus"].items():
        lines.append(
            f"{cpu:>4}  {format_ns(c['noise_ns']):>10}  {number(c['noise_ppm']):>10}  "
            f"{number(c['detours']):>8}  "
            f"{format_ns(c['p99_ns']):>9}  {format_ns(c['max_ns']):>9}  {format_ns(c['resolution_ns']):>10}"
        )
    sources = summary.get("sources", [])
    if sources:
        lines.append("")
        lines.append("Top sources (share of all noise; detours it took part in and its own events, per CPU-second)")
        lines.append(
            f"  {'share':>6}  {'kind':<8} {'name':<36} {'total':>9} {'detours':>7} {'det/s':>8} {'events/s':>9} "
            f"{'mean':>9} {'p99':>9} {'max':>9} {'period':>9}"
        )
        for s in sources[:TOP_SOURCES]:
            lines.append(
                f"  {s['share'] * 100:5.1f}%  {s['kind']:<8} {s['name'][:36]:<36} "
                f"{format_ns(s['total_ns']):>9} "
                f"{number(s['count']):>7} {_rate(s.get('detours_per_s')):>8} {_rate(s.get('events_per_s')):>9} "
                f"{format_ns(s['mean_ns']):>9} {format_ns(s['p99_ns']):>9} "
                f"{format_ns(s['max_ns']):>9} {_period(s['period_s']):>9}"
            )
            if s.get("functions"):
                lines.append(f"  {'':6}  {'':8} ran: {', '.join(s['functions'][:4])}")
        if len(sources) > TOP_SOURCES:
            lines.append(f"  ... {count(len(sources) - TOP_SOURCES, 'more source', 'more sources')} in summary.json")
    quiet = summary.get("quiet_sources", [])
    if quiet:
        shown = ", ".join(f"{q['name']} {_rate(q['events_per_s'])}/s" for q in quiet[:TOP_QUIET])
        more = f", ... {len(quiet) - TOP_QUIET} more" if len(quiet) > TOP_QUIET else ""
        lines.append(f"  ran without a detour above the threshold: {shown}{more}")
    chains = summary.get("chains", [])
    if chains:
        lines.append("")
        lines.append("Top chains (sources in succession inside one detour)")
        for ch in chains[:TOP_CHAINS]:
            lines.append(f"  {format_ns(ch['total_ns']):>9} {number(ch['count']):>6}x  {' -> '.join(ch['sources'])}")
    u = summary["unexplained"]
    lines.append("")
    lines.append(
        f"Unexplained: {u['share'] * 100:.1f}% of noise "
        f"({format_ns(u['total_ns'])} in {count(u['count'], 'detour')})"
        f" — likely {u['likely']}"
    )
    if run_dir:
        lines.append(f"Run written to {run_dir}")
    return "\n".join(lines)


def render_injection(r: Injected) -> str:
    """What `jitterscope inject` did (measure.inject.inject's result)."""
    lines = [
        f"done: {r['wakeups']} wake-ups, {r['missed_deadlines']} missed deadlines"
        + (" (interrupted)" if r["interrupted"] else "")
    ]
    m = r["measured"]
    if m:
        lines.append(
            f"  period  mean {format_ns(m['period_mean_ns'])}, overall {m['period_overall_ns'] / 1e6:.6f} ms; "
            f"deviation p99 {format_ns(m['period_p99_dev_ns'])}, max {format_ns(m['period_max_dev_ns'])}"
        )
        share = m["busy_total_ns"] / (r["wakeups"] * r["period_ns"]) * 100 if r["wakeups"] else 0.0
        lines.append(
            f"  busy    mean {format_ns(m['busy_mean_ns'])}, max {format_ns(m['busy_max_ns'])}, "
            f"total {format_ns(m['busy_total_ns'])} ({share:.2f}% of CPU {r['cpu']})"
        )
    if r["truth"]:
        lines.append(f"  truth   {r['truth']} (TSC at {r['tsc_hz']:.0f} Hz)")
    return "\n".join(lines)
