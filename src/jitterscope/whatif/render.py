"""Terminal output of `whatif` (the data is built by dvfs.py and cache.py)."""

from __future__ import annotations

from jitterscope.humanize import number
from jitterscope.units import format_ns
from jitterscope.whatif.results import CacheResult, CacheView, DvfsApply, DvfsResult


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:+.1%}"


def render_dvfs(r: DvfsResult, path: str) -> str:
    o = r["options"]
    lines = [
        f"whatif dvfs: {path}  ({r['threads']} threads; subframe {format_ns(o['subframe_ns'])} of work, "
        f"warm-up {o['warmup']}, table {o['table'][0]:g}..{o['table'][-1]:g}, {o['quantize']}, "
        f"{o['model']} model, transition {format_ns(o['transition_ns'])})",
        "",
    ]
    ideal = r["ideal_ns"]
    lines.append(f"Ideal (no jitter)      {format_ns(ideal):>10}   1.000")
    lines.append(
        f"Recorded (replayed)    {format_ns(r['replayed_ns']):>10}   {r['recorded_normalized']:.3f}   "
        f"(measured {format_ns(r['recorded_ns'])}; jitter replayed: {format_ns(r['lost_ns'])} lost in "
        f"compute, {format_ns(r['wake_jitter_ns'])} in wake-ups)"
    )
    lines += ["", "  k   run time   normalized   residual   removed   power   energy   transitions   saturated"]
    for k in r["by_k"]:
        removed = "–" if k["removed"] is None else f"{k['removed']:.0%}"
        lines.append(
            f"{k['k']:>3} {format_ns(k['run_ns']):>10}   {k['normalized']:>10.3f}   "
            f"{format_ns(k['residual_ns']):>8}   {removed:>7}   {_pct(k['power']):>6}   "
            f"{_pct(None if k['energy'] is None else k['energy'] - 1):>6}   {number(k['transitions']):>11}   "
            f"{k['saturated']:>8.1%}"
        )
    lines.append("")
    lines.append(
        f"best reactivity: k = {r['best_k']}  (recorded energy {_pct((r['recorded_energy'] or 1) - 1)} "
        "over ideal; power = time-weighted factor^3 - 1)"
    )
    if not r.get("non_sync_seen", True):
        lines.append(
            "note: the sync run has no kernel trace (--no-trace, or tracing unavailable): time its threads lost to "
            "preemption and interrupts outside waits is replayed as compute, so Ideal keeps it and 'removed' is a "
            "share of the synchronisation jitter only; record with tracing to see it"
        )
    if r.get("missed_switches"):
        lines.append(
            f"note: the run's trace missed {number(r['missed_switches'])} context switches (a loaded host): time a "
            "thread spent off its CPU there is not seen as lost, so Ideal may keep some of it"
        )
    if r.get("polled_waits"):
        lines.append(
            f"note: {number(r['polled_waits'])} condvar waits no thread released (timeouts) are replayed as a polling "
            "loop: each ends at its recorded length or when the release that ended the loop comes, if sooner"
        )
    for k in r["by_k"]:
        if k["approximated"]:
            lines.append(
                f"note: k = {k['k']}: {k['approximated']} releases read before their segment was placed "
                "(recorded ties); placed approximately"
            )
    if r.get("apply"):
        lines += _apply_lines(r["apply"])
    return "\n".join(lines)


def _apply_lines(a: DvfsApply) -> list[str]:
    if a["status"] != "applied":
        return [f"--apply: {a['status']}"]
    ratio = a["controlled_s"] / a["nominal_s"] - 1
    out = [
        "",
        f"--apply ({'STAND-IN ' if a['stand_in'] else ''}cpufreq at {a['root']}; control period "
        f"{format_ns(a['period_ns'])}):",
        f"  pinned at factor 1.0   {a['nominal_s']:.3f} s",
        f"  under the controller   {a['controlled_s']:.3f} s   ({ratio:+.1%} run time; "
        f"{number(a['limit_changes'])} limit changes; power "
        + ", ".join(f"CPU {c} {_pct(p)}" for c, p in a["power"].items())
        + ")",
    ]
    if a.get("note"):
        out.append(f"  note: {a['note']}")
    return out


def _cache_row(label: str, v: CacheView) -> str:
    return (
        f"  {label:<26} {number(v['app_misses']):>11} {number(v['vs_ideal']):>10} {v['slowdown']:>9.2%} "
        f"{number(v['extra_misses']):>12} {number(v['app_evicted_by_os']):>13} {number(v['other_hits']):>10}"
    )


def render_cache(r: CacheResult, path: str, remedy: str) -> str:
    lines = [
        f"whatif cache: {path}  ({number(r['accesses'])} accesses of the program, "
        f"{number(r['bursts'])} kernel bursts ({number(r['kernel_accesses'])} accesses) from {r['os_origin']})",
        f"remedy: {remedy}",
        "",
        f"  {'':<26} {'app misses':>11} {'vs ideal':>10} {'slowdown':>9} {'kernel-made':>12} "
        f"{'evicted by OS':>13} {'other hits':>10}",
        f"  {'ideal: unified, no kernel':<26} {number(r['ideal']['app_misses']):>11}",
        f"  {'remedy, no kernel':<26} {number(r['remedy_alone']['app_misses']):>11} "
        f"{number(r['remedy_alone']['app_misses'] - r['ideal']['app_misses']):>10}",
        _cache_row("unified L2 + kernel", r["unified"]),
        _cache_row("remedy + kernel", r["remedy"]),
    ]
    u, m = r["unified"]["vs_ideal"], r["remedy"]["vs_ideal"]
    if u > 0:
        lines.append(
            f"\nthe remedy removes {(u - m) / u:.0%} of the kernel's slowdown "
            f"({r['unified']['slowdown']:.2%} -> {r['remedy']['slowdown']:.2%} at the stated miss penalty)"
        )
    ku, kr = r["unified"]["os_misses"], r["remedy"]["os_misses"]
    lines.append(
        f"the kernel's own misses (not in the slowdown: they lengthen its bursts): unified {number(ku)}, "
        f"remedy {number(kr)}; program + kernel {number(r['unified']['app_misses'] + ku)} -> "
        f"{number(r['remedy']['app_misses'] + kr)}"
    )
    if r["remedy"]["prefetched"]:
        lines.append(
            f"prefetch: {number(r['remedy']['prefetched'])} lines brought back, "
            f"{number(r['remedy']['prefetch_useful'])} of them used"
        )
    if r["per_source"]:
        lines += ["", "Per source (simulated alone)   bursts   kernel-made misses unified -> remedy   slowdown"]
        for s in r["per_source"]:
            lines.append(
                f"  {s['source']:<28} {number(s['bursts']):>7}   {number(s['unified']['extra_misses']):>12}"
                f" -> {number(s['remedy']['extra_misses']):<12}         {s['unified']['os_slowdown']:.2%} -> "
                f"{s['remedy']['os_slowdown']:.2%}"
            )
    return "\n".join(lines)
