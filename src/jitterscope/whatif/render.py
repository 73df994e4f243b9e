"""Terminal output of `whatif` (the data is built by dvfs.py and cache.py)."""

from __future__ import annotations

from typing import Any

from jitterscope.humanize import number
from jitterscope.units import format_ns


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:+.1%}"


def render_dvfs(r: dict[str, Any], path: str) -> str:
    o = r["options"]
    lines = [f"whatif dvfs: {path}  ({r['threads']} threads; subframe {format_ns(o['subframe_ns'])} of work, "
             f"warm-up {o['warmup']}, table {o['table'][0]:g}..{o['table'][-1]:g}, {o['quantize']}, "
             f"{o['model']} model, transition {format_ns(o['transition_ns'])})", ""]
    ideal = r["ideal_ns"]
    lines.append(f"Ideal (no jitter)      {format_ns(ideal):>10}   1.000")
    lines.append(f"Recorded (replayed)    {format_ns(r['replayed_ns']):>10}   {r['recorded_normalized']:.3f}   "
                 f"(measured {format_ns(r['recorded_ns'])}; jitter replayed: {format_ns(r['lost_ns'])} lost in "
                 f"compute, {format_ns(r['wake_jitter_ns'])} in wake-ups)")
    lines += ["", "  k   run time   normalized   residual   removed   power   energy   transitions   saturated"]
    for k in r["by_k"]:
        removed = "–" if k["removed"] is None else f"{k['removed']:.0%}"
        lines.append(f"{k['k']:>3} {format_ns(k['run_ns']):>10}   {k['normalized']:>10.3f}   "
                     f"{format_ns(k['residual_ns']):>8}   {removed:>7}   {_pct(k['power']):>6}   "
                     f"{_pct(None if k['energy'] is None else k['energy'] - 1):>6}   {number(k['transitions']):>11}   "
                     f"{k['saturated']:>8.1%}")
    lines.append("")
    lines.append(f"best reactivity: k = {r['best_k']}  (recorded energy {_pct((r['recorded_energy'] or 1) - 1)} "
                 "over ideal; power = time-weighted factor^3 - 1)")
    for k in r["by_k"]:
        if k["approximated"]:
            lines.append(f"note: k = {k['k']}: {k['approximated']} releases read before their segment was placed "
                         "(recorded ties); placed approximately")
    if r.get("apply"):
        lines.append(f"--apply: {r['apply']}")
    return "\n".join(lines)
