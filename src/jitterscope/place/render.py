"""Terminal output of a place run (from its summary.json)."""

from __future__ import annotations

from jitterscope.humanize import duration_ns as fmt_ns
from jitterscope.humanize import percent
from jitterscope.place.results import CompareSummary, Spread, Summary


def render(s: Summary, run_dir: str) -> str:
    r = s["run"]
    topo = r["topology"]
    groups = " ".join("[" + ",".join(map(str, g)) + "]" for g in topo["llc_groups"])
    lines = [
        f"jitterscope place: policies {','.join(r['policies'])}, quantum {fmt_ns(r['quantum_ns'])}, "
        f"{fmt_ns(r['wall_ns'])} ({r['ended_by']}){', DRY RUN' if r['dry_run'] else ''}",
        f"  topology: LLC groups {groups}"
        + (f", LITTLE {topo['little']}" if topo["little"] else "")
        + f" ({topo['source']}{'; ' + topo['note'] if topo['note'] else ''})",
        f"  weights: {', '.join(f'{k} x{v}' for k, v in s['weight_sources'].items()) or 'none observed'}"
        + ("" if r["pmu"]["available"] else f"  [{r['pmu']['why']}]"),
        "",
    ]
    lines.append(
        f"  {'task':<28} {'cpu':>3} {'weight':>7} {'source':<9} {'throughput':>12} {'on CPU':>9} "
        f"{'waiting':>9} {'faults':>6}  end"
    )
    for t in s["tasks"]:
        lines.append(
            f"  {t['name'][:20] + '[' + str(t['pid']) + ']':<28} {t['home']:>3} {t['mean_weight']:>7.3g} "
            f"{t['weight_source']:<9} {t['ops_per_s']:>9.1f}/s {fmt_ns(t['run_ns']):>9} "
            f"{fmt_ns(t['wait_ns']):>9} {t['faults']:>6}  {t['end']}"
        )
    lines.append("")
    co = s["coheavy_fraction"]
    lines.append(f"  heavy tasks co-running in one LLC group: {percent(co)} of the time ({s['coheavy_method']})")
    if s["balanced_fraction"] is not None:
        lines.append(f"  OBS-X: cache load balanced across groups {percent(s['balanced_fraction'])} of the time")
    if s["credit"]["count"]:
        lines.append(
            f"  OBS-C: {s['credit']['count']} credits, {fmt_ns(s['credit']['moved_ns'])} moved from heavy "
            f"to light tasks"
        )
    lines.append("  decisions: " + (", ".join(f"{k} {v}" for k, v in sorted(s["decisions"].items())) or "none"))
    o = s["observer"]
    lines.append(f"  observer: {o['snapshots']} snapshots, {fmt_ns(o['mean_ns'])} each (p99 {fmt_ns(o['p99_ns'])})")
    lines.append(f"  run: {run_dir}  (jitterscope report {run_dir})")
    return "\n".join(lines)


def _num(v: float | None, fmt: str = "{:,.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def _x(sp: Spread | None) -> str:
    return "-" if sp is None else f"x{sp['gmean']:.3f} ({sp['min']:.3f} .. {sp['max']:.3f})"


def render_compare(s: CompareSummary, run_dir: str) -> str:
    """The side-by-side table of a comparison (compare.py's summary): per task and policy set, then the sets."""
    base, done = s["baseline"], list(s["policies"])
    dur = f" x {fmt_ns(s['duration_ns'])}" if s["duration_ns"] else ""
    lines = [
        f"jitterscope place --compare: {len(s['tasks'])} tasks, {', '.join(done)} (baseline {base}); "
        f"{s['repeat']} repetitions{dur}, interleaved ({s['ended_by']})",
        "",
        f"  {'task':<24} {'policy':<8} {'ops/s':>10} {'x ' + base:>8} {'ops/CPU-s':>10} {'x ' + base:>8} "
        f"{'wait/CPU-s':>10} {'preempt/CPU-s':>13} {'p99 latency':>11}",
    ]
    for t in s["tasks"]:
        b = t["by_policy"].get(base)
        bw, bc = (b["ops_per_s"], b["ops_per_cpu_s"]) if b else (None, None)
        for k, lb in enumerate(done):
            m = t["by_policy"][lb]
            name = (f"{t['name'][:18]}#{t['task']}" + ("*" if t["protected"] else "")) if k == 0 else ""
            rw = m["ops_per_s"] / bw if bw and m["ops_per_s"] is not None else None
            rc = m["ops_per_cpu_s"] / bc if bc and m["ops_per_cpu_s"] is not None else None
            died = f"  died in {m['died']}/{m['repetitions']}" if m["died"] else ""
            lines.append(
                f"  {name:<24} {lb:<8} {_num(m['ops_per_s']):>10} {_num(rw, '{:.3f}'):>8} "
                f"{_num(m['ops_per_cpu_s']):>10} {_num(rc, '{:.3f}'):>8} "
                f"{_num(m['wait_per_cpu_s'], '{:.3f} s'):>10} {_num(m['preempt_per_cpu_s']):>13} "
                f"{fmt_ns(m['latency_p99_ns']) if m['latency_p99_ns'] is not None else '-':>11}{died}"
            )
    lines += ["", f"  speedup vs {base}: geometric mean over tasks (worst .. best task)"]
    for lb in done:
        p = s["policies"][lb]
        co = p["coheavy_fraction"]
        lines.append(
            f"    {lb:<8} per wall second {_x(p['speedup_wall']):<28} per CPU second "
            f"{_x(p['speedup_cpu']):<28} heavy co-running {percent(co) if co is not None else '-'}"
        )
    who = "protected tasks (*)" if s["noise_of"] == "protected" else "all tasks (none is --protect'ed)"
    lines += ["", f"  noise of {who}, mean: run-queue wait and preemptions per CPU-second, p99 heartbeat latency"]
    for lb in done:
        n, r = s["policies"][lb]["noise"], s["policies"][lb]["noise_ratio"]
        lines.append(
            f"    {lb:<8} wait {_num(n['wait_per_cpu_s'], '{:.3f} s'):>9} "
            f"({_num(r['wait_per_cpu_s'], 'x{:.2f}')})  preempt {_num(n['preempt_per_cpu_s']):>8} "
            f"({_num(r['preempt_per_cpu_s'], 'x{:.2f}')})"
            f"  p99 {fmt_ns(n['latency_p99_ns']) if n['latency_p99_ns'] is not None else '-':>9} "
            f"({_num(r['latency_p99_ns'], 'x{:.2f}')})"
        )
    lines.append(f"  runs: {run_dir}/runs/ ({len(s['runs'])}; each a place run: jitterscope report DIR)")
    return "\n".join(lines)
