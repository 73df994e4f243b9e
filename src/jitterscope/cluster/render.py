"""Terminal output of the cluster commands (formatting only: the data is built elsewhere)."""

from __future__ import annotations

from pathlib import Path

from jitterscope.cluster.bsp_results import BspSummary
from jitterscope.cluster.summary import Summary
from jitterscope.humanize import count, percent, ppm, seconds
from jitterscope.humanize import duration_ns as format_ns

MAX_ROWS = 20


def _ppm(x: float) -> str:
    return f"{ppm(x)} ({percent(x / 1e6)})" if x >= 1 else ppm(x)


def render_measure(s: Summary, out: Path) -> str:
    run = s["run"]
    lines = [
        f"cluster run {out}: {count(run['nodes'], 'node')} ({count(run['hosts'], 'host')}, "
        f"{count(run['ranks'], 'rank')}), {seconds(run['duration_s'])}, "
        f"threshold {format_ns(run['threshold_ns'])}, "
        f"tracing {'on' if run['tracing'] else 'off'}",
        f"noise per node: median {_ppm(s['noise_ppm']['median'])}, "
        f"min {_ppm(s['noise_ppm']['min'])}, max {_ppm(s['noise_ppm']['max'])}",
        "",
        f"{'node':<28} {'rank':>4} {'noise':>22} {'detours':>8} {'p99':>10} {'max':>10}  top source",
    ]
    for r in s["nodes"][:MAX_ROWS]:
        lines.append(
            f"{r['node']:<28} {r['rank']:>4} {_ppm(r['noise_ppm']):>22} {r['detours']:>8} "
            f"{format_ns(r['p99_ns']):>10} {format_ns(r['max_ns']):>10}  {r['top_source'] or '-'}"
        )
    if len(s["nodes"]) > MAX_ROWS:
        lines.append(f"... {count(len(s['nodes']) - MAX_ROWS, 'more node', 'more nodes')} in summary.json")
    lines += ["", "sources by nodes hit:"]
    for src in s["sources"][:10]:
        lines.append(
            f"  {src['kind'] + ':' + src['name']:<46} {count(src['nodes'], 'node'):>10}  "
            f"mean {_ppm(src['mean_ppm'])}"
            f", worst {src['max_node']} {_ppm(src['max_ppm'])}"
        )
    lines.append("")
    method = s["outlier_method"]
    if method.get("note"):
        lines.append(f"outliers: none computed ({method['note']})")
    elif not s["outliers"]:
        lines.append(
            "outliers: none (no node's noise from any source is > "
            f"{method['cutoff']} robust SDs above the other nodes')"
        )
    else:
        lines.append(f"outliers (robust z > {method['cutoff']} against the other nodes):")
        for o in s["outliers"][:10]:
            why = ", ".join(
                f"{x['source']} {_ppm(x['ppm'])} vs typical {_ppm(x['typical_ppm'])} (z {x['z']:.1f})"
                for x in o["sources"][:3]
            )
            lines.append(f"  {o['node']}: {why}")
    if s.get("lost_events"):
        lines.append(f"warning: {count(s['lost_events'], 'kernel trace event')} lost: attribution is incomplete")
    return "\n".join(lines)


def _signed_percent(x: float) -> str:
    return ("+" if x >= 0 else "") + percent(x)


def render_bsp(s: BspSummary, out: Path) -> str:
    r = s["run"]
    m = s["measured"]
    lines = [
        f"cluster bsp {out}: {count(r['nodes'], 'node')}, "
        f"{count(r['phases'], 'phase')} of {format_ns(r['phase_ns'])}, "
        f"sync {r['sync']} (noise-free {format_ns(r['sync_ns'])})",
        f"  ideal (no noise)      {m['ideal_s']:.6f} s",
        f"  measured              {m['runtime_s']:.6f} s   slowdown {_signed_percent(m['slowdown'])}",
    ]
    for key, label in (
        ("trace_driven", "simulated, trace"),
        ("fitted", "simulated, fitted"),
        ("replay", "replayed as recorded"),
        ("simulate", "jitterscope simulate"),
    ):
        p = s["predictions"].get(key)
        if not p:
            continue
        if p.get("error"):
            lines.append(f"  {label:<21} unavailable: {p['error']}")
            continue
        ci = p.get("ci95_s")
        ci_txt = f" ±{ci:.6f}" if ci else " " * 9
        lines.append(
            f"  {label:<21} {p['runtime_s']:.6f} s{ci_txt}   slowdown {_signed_percent(p['slowdown'])}   "
            f"error {p['slowdown_error'] * 100:+.2f} points ({p['runtime_rel_error'] * 100:+.2f}% of runtime)"
        )
    lines += ["", f"{'node':<28} {'compute mean':>13} {'noise/phase':>12} {'slowest in':>11}"]
    for n in s["nodes"][:MAX_ROWS]:
        lines.append(
            f"{n['node']:<28} {format_ns(n['compute_mean_ns']):>13} {format_ns(n['noise_mean_ns']):>12} "
            f"{percent(n['slowest_share']):>11}"
        )
    return "\n".join(lines)
