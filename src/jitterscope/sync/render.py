"""Terminal summary of a sync run (the data is summary.json)."""

from __future__ import annotations

from typing import Any

from jitterscope.units import format_ns

TYPE_LABELS = {"lu": "lock-unlock", "u": "unlock", "sw": "signal-wait", "s": "signal", "bw": "broadcast-wait",
               "b": "broadcast", "barw": "barrier-wait", "bar": "barrier", "jw": "join-wait"}


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.1%}"


def _causes(cs: list[dict[str, Any]]) -> str:
    return ", ".join(("self" if c["kind"] == "self" else f"{c['kind']}:{c['name']}") + f" {c['share']:.0%}"
                     for c in cs[:3])


def render(s: dict[str, Any], path: str) -> str:
    r = s["run"]
    run_ns = s["run_ns"]
    lines = [f"jitterscope sync: {' '.join(r['command'])}  (exit code {r['exit_code']})",
             f"run {path}: {s['processes']} process(es), {s['threads']} threads, {s['waits']} contended waits; "
             f"threshold N = {format_ns(r['threshold_ns'])} ({r['mode']} mode)", ""]
    cp = s["critical_path"]
    lines.append(f"Run time            {format_ns(run_ns)}")
    lines.append(f"Sync jitter         {format_ns(s['sync_jitter_ns'])} in {s['sync_events']} events (all threads)")
    lines.append(f"Critical path       {format_ns(cp['counter_jitter_ns'])} of jitter = {_pct(cp['share'])} of the "
                 f"run time (max-on-join counters); {format_ns(cp['path_jitter_ns'])} on the happens-before path "
                 f"through {len(cp['threads'])} thread(s)")
    if r["tracing"]:
        lines.append(f"Non-sync jitter     {format_ns(s['non_sync_jitter_ns'] or 0)}  (sync share of all jitter: "
                     f"{_pct(s['sync_share_of_jitter'])})")
        lines.append(f"Holder delay        {format_ns(s['holder_delay_ns'] or 0)}  (lock holders/signallers "
                     f"preempted or interrupted while others waited)")
    lines += ["", "By type            count     jitter    share   median T      p99 T   causes"]
    for t, d in s["types"].items():
        if not d["intervals"] and not d["count"]:
            continue
        label = TYPE_LABELS.get(t, {"hd": "holder-delay", "ns": "non-sync"}.get(t, t))
        share = _pct(d["share"]) if t in TYPE_LABELS else ""
        lines.append(f"  {t:<4} {label:<14}{d['count']:>5} {format_ns(d['jitter_ns']):>10} {share:>8} "
                     f"{format_ns(d['t']['p50_ns']):>10} {format_ns(d['t']['p99_ns']):>10}   {_causes(d['causes'])}")
    if s["objects"]:
        lines += ["", "Top objects"]
        for o in s["objects"]:
            name = o["symbol"] or o["obj"]
            where = f" at {o['site']}" if o["site"] else ""
            types = ", ".join(f"{k} {format_ns(v)}" for k, v in o["types"].items())
            lines.append(f"  {o['kind']:<8} {name}{where}: {format_ns(o['jitter_ns'])} in {o['count']} ({types})")
            if o["causes"]:
                lines.append(f"           causes: {_causes(o['causes'])}")
    if s["causes"]:
        lines += ["", "Causes of sync jitter: " + _causes(s["causes"])]
    fr = s["frames"]
    if fr["count"] > 1:
        lines.append(f"Frames: {fr['count']}, time median {format_ns(fr['time']['p50_ns'])}, p99 "
                     f"{format_ns(fr['time']['p99_ns'])}, max {format_ns(fr['time']['max_ns'])}; jitter per frame "
                     f"median {format_ns(fr['jitter']['p50_ns'])}, max {format_ns(fr['jitter']['max_ns'])}")
    fit = s.get("fit")
    if fit and fit.get("fitted"):
        ln = fit["lognormal"]
        lines.append(f"Distribution: {fit['verdict']}; lognormal median {format_ns(ln['median_ns'])}, "
                     f"sigma {ln['sigma']:.2f} ({'fits' if ln['fits'] else 'does not fit'})")
    notes = []
    if s["dropped"]:
        notes.append(f"{s['dropped']} records dropped (full rings): raise JS_SYNC_RING")
    if s["lost_events"]:
        notes.append(f"{s['lost_events']} kernel events lost: part of the causes is unexplained; raise --buffer")
    um = {k: v for k, v in s["unmatched"].items() if v}
    if um:
        notes.append("unmatched: " + ", ".join(f"{k} {v}" for k, v in um.items()))
    if not r["tracing"]:
        notes.append("kernel tracing off: no causes, holder delay or non-sync jitter")
    if notes:
        lines += [""] + [f"note: {n}" for n in notes]
    return "\n".join(lines)
