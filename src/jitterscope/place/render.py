"""Terminal output of a place run (from its summary.json)."""

from __future__ import annotations

from typing import Any

from jitterscope.humanize import duration_ns as fmt_ns
from jitterscope.humanize import percent


def render(s: dict[str, Any], run_dir: str) -> str:
    r = s["run"]
    topo = r["topology"]
    groups = " ".join("[" + ",".join(map(str, g)) + "]" for g in topo["llc_groups"])
    lines = [f"jitterscope place: policies {','.join(r['policies'])}, quantum {fmt_ns(r['quantum_ns'])}, "
             f"{fmt_ns(r['wall_ns'])} ({r['ended_by']}){', DRY RUN' if r['dry_run'] else ''}",
             f"  topology: LLC groups {groups}" + (f", LITTLE {topo['little']}" if topo["little"] else "")
             + f" ({topo['source']}{'; ' + topo['note'] if topo['note'] else ''})",
             f"  weights: {', '.join(f'{k} x{v}' for k, v in s['weight_sources'].items()) or 'none observed'}"
             + ("" if r["pmu"]["available"] else f"  [{r['pmu']['why']}]"), ""]
    lines.append(f"  {'task':<28} {'cpu':>3} {'weight':>7} {'source':<9} {'throughput':>12} {'on CPU':>9} "
                 f"{'waiting':>9} {'faults':>6}  end")
    for t in s["tasks"]:
        lines.append(f"  {t['name'][:20] + '[' + str(t['pid']) + ']':<28} {t['home']:>3} {t['mean_weight']:>7.3g} "
                     f"{t['weight_source']:<9} {t['ops_per_s']:>9.1f}/s {fmt_ns(t['run_ns']):>9} "
                     f"{fmt_ns(t['wait_ns']):>9} {t['faults']:>6}  {t['end']}")
    lines.append("")
    co = s["coheavy_fraction"]
    lines.append(f"  heavy tasks co-running in one LLC group: {percent(co)} of the time ({s['coheavy_method']})")
    if s["balanced_fraction"] is not None:
        lines.append(f"  OBS-X: cache load balanced across groups {percent(s['balanced_fraction'])} of the time")
    if s["credit"]["count"]:
        lines.append(f"  OBS-C: {s['credit']['count']} credits, {fmt_ns(s['credit']['moved_ns'])} moved from heavy "
                     f"to light tasks")
    lines.append("  decisions: " + (", ".join(f"{k} {v}" for k, v in sorted(s["decisions"].items())) or "none"))
    o = s["observer"]
    lines.append(f"  observer: {o['snapshots']} snapshots, {fmt_ns(o['mean_ns'])} each (p99 {fmt_ns(o['p99_ns'])})")
    lines.append(f"  run: {run_dir}  (jitterscope report {run_dir})")
    return "\n".join(lines)
