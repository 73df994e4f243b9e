"""Terminal summary of a sync run (the data is summary.json)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jitterscope.units import format_ns

if TYPE_CHECKING:
    from jitterscope.sync.compare import Comparison, Row, Stats
    from jitterscope.sync.rows import Cause
    from jitterscope.sync.summary import CauseShare, OverheadJson, Summary

TYPE_LABELS = {
    "lu": "lock-unlock",
    "u": "unlock",
    "sw": "signal-wait",
    "s": "signal",
    "bw": "broadcast-wait",
    "b": "broadcast",
    "barw": "barrier-wait",
    "bar": "barrier",
    "jw": "join-wait",
    "pw": "post-wait",
    "p": "post",
}


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.1%}"


def cause_label(c: Cause | CauseShare) -> str:
    """`irq:local_timer`; the thread's own time as `self (waiter)` (its wake-up path) or `self (caller)`."""
    return f"self ({c['side']})" if c["kind"] == "self" else f"{c['kind']}:{c['name']}"


def causes_text(cs: list[CauseShare]) -> str:
    """The three largest causes; one thread taking the waiter's and the caller's CPU is one entry."""
    shares: dict[str, float] = {}
    for c in cs:
        shares[cause_label(c)] = shares.get(cause_label(c), 0.0) + c["share"]
    top = sorted(shares.items(), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{label} {share:.0%}" for label, share in top)


def render(s: Summary, path: str) -> str:
    r = s["run"]
    run_ns = s["run_ns"]
    code = "unknown (recovered run)" if r["exit_code"] is None else r["exit_code"]
    lines = [
        f"jitterscope sync: {' '.join(r['command'])}  (exit code {code})",
        f"run {path}: {s['processes']} process(es), {s['threads']} threads, {s['waits']} contended waits; "
        f"threshold N = {format_ns(r['threshold_ns'])} ({r['mode']} mode)",
        "",
    ]
    cp = s["critical_path"]
    lines.append(f"Run time            {format_ns(run_ns)}")
    lines.append(f"Sync jitter         {format_ns(s['sync_jitter_ns'])} in {s['sync_events']} events (all threads)")
    lines.append(
        f"Critical path       {format_ns(cp['counter_jitter_ns'])} of jitter = {_pct(cp['share'])} of the "
        f"run time (max-on-join counters); {format_ns(cp['path_jitter_ns'])} on the happens-before path "
        f"through {len(cp['threads'])} thread(s)"
    )
    if r["tracing"]:
        lines.append(
            f"Non-sync jitter     {format_ns(s['non_sync_jitter_ns'] or 0)}  (sync share of all jitter: "
            f"{_pct(s['sync_share_of_jitter'])})"
        )
        lines.append(
            f"Holder delay        {format_ns(s['holder_delay_ns'] or 0)}  (lock holders/signallers "
            f"preempted or interrupted while others waited)"
        )
    seen = {t: d for t, d in s["types"].items() if d["intervals"] or d["count"]}
    lines += [
        "",
        "By type            count     jitter    share   median T      p99 T   causes"
        if seen
        else "No contended synchronisation: no intervals of any type",
    ]
    for t, d in seen.items():
        label = TYPE_LABELS.get(t, {"hd": "holder-delay", "ns": "non-sync"}.get(t, t))
        share = _pct(d["share"]) if t in TYPE_LABELS else ""
        lines.append(
            f"  {t:<4} {label:<14}{d['count']:>5} {format_ns(d['jitter_ns']):>10} {share:>8} "
            f"{format_ns(d['t']['p50_ns']):>10} {format_ns(d['t']['p99_ns']):>10}   "
            f"{causes_text(d['causes'])}"
        )
    if s["objects"]:
        lines += ["", "Top objects"]
        for o in s["objects"]:
            name = o["symbol"] or o["obj"]
            where = f" at {o['site']}" if o["site"] else ""
            types = ", ".join(f"{k} {format_ns(v)}" for k, v in o["types"].items())
            lines.append(f"  {o['kind']:<8} {name}{where}: {format_ns(o['jitter_ns'])} in {o['count']} ({types})")
            if o["causes"]:
                lines.append(f"           causes: {causes_text(o['causes'])}")
    if s["causes"]:
        lines += ["", "Causes of sync jitter: " + causes_text(s["causes"])]
    fr = s["frames"]
    if fr["count"] > 1:
        lines.append(
            f"Frames: {fr['count']}, time median {format_ns(fr['time']['p50_ns'])}, p99 "
            f"{format_ns(fr['time']['p99_ns'])}, max {format_ns(fr['time']['max_ns'])}; jitter per frame "
            f"median {format_ns(fr['jitter']['p50_ns'])}, max {format_ns(fr['jitter']['max_ns'])}"
        )
    sf = s.get("subframes")
    if sf and sf["count"]:
        # no subframe measured (all in the warm-up): no statistics of them to print
        stats = (
            f"per measured subframe p99 {format_ns(sf['jitter_p99_ns'])}, max {format_ns(sf['jitter_max_ns'])}"
            if sf["measured"]
            else "none measured"
        )
        lines.append(
            f"Subframes: {sf['count']:,} of {format_ns(sf['length_ns'])} per thread ({sf['measured']:,} after "
            f"a warm-up of {sf['warmup']}), {sf['with_jitter']:,} with jitter; {stats}"
        )
    fit = s.get("fit")
    if fit and fit.get("fitted"):
        ln = fit["lognormal"]
        lines.append(
            f"Distribution: {fit['verdict']}; lognormal median {format_ns(ln['median_ns'])}, "
            f"sigma {ln['sigma']:.2f} ({'fits' if ln['fits'] else 'does not fit'})"
        )
    elif fit and fit.get("reason"):
        lines.append(f"Distribution: not fitted: {fit['reason']}")
    oh = s.get("overhead")
    if oh:
        lines.append(f"jitterscope's own   {overhead_text(oh)}")
    if notes(s):
        lines += [""] + [f"note: {n}" for n in notes(s)]
    return "\n".join(lines)


def overhead_text(oh: OverheadJson) -> str:
    """jitterscope's own time around CMD: `2.1 s of 12.3 s wall (17%): start-up 0.6 s, analysis 1.2 s, ...`."""
    parts = [f"start-up {oh['startup_s']:.2f} s", f"analysis {oh['analysis_s']:.2f} s"]
    if oh.get("report_s") is not None:
        parts.append(f"report {oh['report_s']:.2f} s")
    return (
        f"{oh['own_s']:.2f} s of {oh['wall_s']:.2f} s wall ({_pct(oh['own_share'])}; CMD {oh['program_s']:.2f} s): "
        + ", ".join(parts)
    )


def notes(s: Summary) -> list[str]:
    """What the reader must know to trust the numbers (dropped records, lost events, no trace...)."""
    out = []
    if s["dropped"]:
        out.append(f"{s['dropped']} records dropped (full rings): raise JS_SYNC_RING")
    if s["lost_events"]:
        out.append(f"{s['lost_events']} kernel events lost: part of the causes is unexplained; raise --buffer")
    um = {k: v for k, v in s["unmatched"].items() if v}
    if um:
        out.append("unmatched: " + ", ".join(f"{k} {v}" for k, v in um.items()))
    if not s["run"]["tracing"]:
        out.append("kernel tracing off: no causes, holder delay or non-sync jitter")
    if s.get("unseen"):
        out.append("not seen by the interposer: " + "; ".join(s["unseen"]))
    return out


def _q(row: Row) -> str:
    qs = [t["q"] for t in row["tests"].values() if "q" in t]
    return f"{min(qs):.2g}" if qs else "-"


def _ratio(x: float | None) -> str:
    return "new" if x is None else f"{x:.2f}"


def render_compare(res: Comparison) -> str:
    """Terminal text of a sync comparison (sync/compare.py)."""
    b, n = res["runs"]["base"], res["runs"]["new"]
    lines = [
        f"BASE {b['path']}: {' '.join(b['command'])} ({format_ns(b['run_ns'])}, {b['threads']} threads)",
        f"NEW  {n['path']}: {' '.join(n['command'])} ({format_ns(n['run_ns'])}, {n['threads']} threads)",
        f"basis: N = {format_ns(res['basis']['threshold_ns'])}, {res['basis']['mode']} mode; events, jitter, "
        f"% of run time; ratio: NEW/BASE jitter per second of run time; q: the smallest BH-adjusted p of the "
        f"rate and per-event tests",
        "",
        f"{'':22}{'BASE':>24}{'NEW':>24}{'ratio':>8}{'q':>9}",
    ]

    def side(s: Stats) -> str:
        return f"{s['count']:>6} {format_ns(s['jitter_ns']):>9} {s['ppm'] / 1e4:>6.2f}%"

    for r in [res["total"], *res["types"]]:
        label = (
            r["name"]
            if r["name"] == "all sync"
            else f"{r['name']:<4} "
            + TYPE_LABELS.get(r["name"], {"hd": "holder-delay", "ns": "non-sync"}.get(r["name"], ""))
        )
        lines.append(f"{label:<22}{side(r['base']):>24}{side(r['new']):>24}{_ratio(r['ratio']):>8}{_q(r):>9}")
    lines.append(f"{'critical path':<22}{format_ns(b['critical_path_ns']):>24}{format_ns(n['critical_path_ns']):>24}")
    if res["objects"]:
        lines += ["", "Objects (largest change first)"]
        for r in res["objects"]:
            lines.append(
                f"  {r['name'][:40]:<40} {format_ns(r['base']['jitter_ns']):>9} -> "
                f"{format_ns(r['new']['jitter_ns']):>9}  ratio {_ratio(r['ratio'])}  q {_q(r)}"
            )
    if res["causes"]:
        lines += ["", "Causes (largest change first)"]
        for c in res["causes"]:
            lines.append(f"  {c['name'][:60]:<60} {format_ns(c['base_ns']):>9} -> {format_ns(c['new_ns']):>9}")
    lines += [f"note: {x}" for x in res["notes"]]
    if res["regression"]:
        lines.append(
            f"REGRESSION: {', '.join(res['worse'])} worse (q < {res['alpha']:g}, ratio >= "
            f"{res['min_ratio']:g}, +{res['min_ppm']:g} ppm of the run time)"
        )
    return "\n".join(lines)
