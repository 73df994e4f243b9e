"""Terminal renderings: the compiled schedule (`compile --explain`), a run's summary, the bench table."""

from __future__ import annotations

from typing import Any

from jitterscope.pipeline.compiler import Schedule
from jitterscope.pipeline.results import BenchRow, Late, Summary
from jitterscope.pipeline.stats import fmt_us
from jitterscope.units import format_cpulist


def _kib(n: int) -> str:
    return f"{n:,} B" if n < 1 << 20 else f"{n:,} B ({n / 2**20:.3g} MiB)"


def compile_headline(s: Schedule) -> str:
    kinds: dict[str, int] = {}
    for g in s.signals:
        kinds[g.kind] = kinds.get(g.kind, 0) + 1
    sig = ", ".join(f"{n} {k}" for k, n in kinds.items()) or "none"
    lines = [
        (
            f"{s.graph.name}: {s.options.heuristic} on {len(s.threads)} thread{'s' * (len(s.threads) != 1)}, "
            f"{s.memory.allocator} memory"
        ),
        (
            f"  {len(s.graph.boxes)} boxes -> {len(s.inst.subboxes)} sub-boxes (split {s.options.parts}), "
            f"{len(s.inst.edges)} dependencies, {len(s.signals)} signals ({sig})"
        ),
        f"  memory {_kib(s.memory.total)} in {s.memory.regions} region(s) for {len(s.graph.buffers)} buffers",
    ]
    if s.plan.sos is not None:
        so = s.plan.sos
        lines.append(
            f"  reduced: peak active data {_kib(so.peak)} (greedy {_kib(so.greedy_peak)}), "
            f"{'proven minimum' if so.proven else 'not proven minimum'} after {so.states:,} states"
        )
    lines += [f"  note: {n}" for n in s.notes]
    return "\n".join(lines)


def explain(s: Schedule) -> str:
    """The schedule as tables: per-thread op lists, sub-boxes, signals, memory map."""
    subs, w = s.inst.subboxes, s.graph.width
    thread = s.plan.thread_of()
    out = [compile_headline(s), "", "threads (each repeats its list every iteration; W wait, E run, S post):"]
    for t in range(len(s.threads)):
        out.append(f"  thread{t}: {', '.join(s.op_text(t))}")
    waits: dict[int, list[str]] = {}
    posts: dict[int, list[str]] = {}
    for g in s.signals:
        tag = f"{g.name}{'!' if g.tokens else ''}"
        waits.setdefault(g.dst, []).append(tag)
        posts.setdefault(g.src, []).append(tag)
    out += [
        "",
        (
            f"{'sub-box':10} {'region [x0,y0]:[x1,y1]':24} {'thread':>6} {'start':>10} {'finish':>10}  "
            f"{'waits':14} posts"
        ),
    ]
    for x in sorted(subs, key=lambda x: (s.plan.start[x.index], x.index)):
        r = x.region(w)
        out.append(
            f"{x.name:10} {f'[{r[0]},{r[1]}]:[{r[2]},{r[3]}]':24} {thread[x.index]:>6} "
            f"{s.plan.start[x.index]:>10.6g} {s.plan.finish[x.index]:>10.6g}  "
            f"{' '.join(waits.get(x.index, [])) or '-':14} {' '.join(posts.get(x.index, [])) or '-'}"
        )
    out += ["", "signals (! = one initial token):"]
    out += [
        f"  {g.name}{'!' if g.tokens else ' '} {g.kind:7} {subs[g.src].name} -> {subs[g.dst].name}"
        + (" (next iteration)" if g.tokens else "")
        for g in s.signals
    ] or ["  none (one thread)"]
    out += ["", "memory:"]
    for b in s.memory.order:
        lo, hi = s.memory.range(b)
        buf = s.graph.buffers[b]
        readers = ", ".join(f"{x}.{p}" for x, p in buf.readers)
        out.append(f"  {buf.name:14} [{lo:>12,}, {hi:>12,})  read by {readers}")
    out.append("start/finish: simulated from the weights (timing: in the graph, else the kernels' cost model)")
    return "\n".join(out)


def run_text(summary: Summary, meta: dict[str, Any], path: str) -> str:
    r, lat = summary["run"], summary["latency"]
    opts = meta.get("options", {})
    period = opts.get("period_ns") or 0
    release = f"released every {fmt_us(period)} us" if period else "back to back"
    lines = [
        f"pipeline {r['graph']}: {r['heuristic']} on {r['threads']} thread{'s' * (r['threads'] != 1)} "
        f"(CPUs {format_cpulist(r['cpus'])}), {r['memory']} memory; {r['iterations']:,} iterations {release}, "
        f"{opts.get('wait')} waits" + (" (interrupted)" if r.get("interrupted") else "")
    ]
    if lat["n"]:
        lines += [
            (
                f"  latency  mean ± σ  {fmt_us(lat['mean'])} ± {fmt_us(lat['sd'])} us"
                f"     min … max  {fmt_us(lat['min'])} … {fmt_us(lat['max'])} us"
            ),
            (f"           p50 {fmt_us(lat['p50'])} us   p99 {fmt_us(lat['p99'])} us   p99.9 {fmt_us(lat['p999'])} us"),
        ]
    subs = summary.get("subboxes") or []
    if subs:
        worst = sorted(subs, key=lambda x: -x["sd_ns"])[:4]
        lines.append(
            "  sub-boxes with the most variation (mean ± σ, max; thread): "
            + "; ".join(
                f"{x['name']} {fmt_us(x['mean_ns'])} ± {fmt_us(x['sd_ns'])}, {fmt_us(x['max_ns'])} us (t{x['thread']})"
                for x in worst
            )
        )
    g = summary.get("guard", {})
    if g.get("enabled"):
        lines.append(
            f"  guard: {g['violations']} violation(s)"
            + (f": {meta.get('first_violation')}" if g["violations"] else " (no race, no overlap)")
        )
    lines.append(f"  outputs: digest {summary['outputs']['digest']} ({len(summary['outputs']['sinks'])} sink(s))")
    late = summary.get("late")
    if late:
        lines += late_text(late)
    elif meta.get("tracing", {}).get("enabled") is False:
        lines.append("  late iterations: not explained (run with --trace to attribute them to kernel sources)")
    for w in meta.get("warnings", []):
        lines.append(f"  warning: {w}")
    lines.append(f"  run directory: {path}")
    return "\n".join(lines)


def late_text(late: Late) -> list[str]:
    if not late.get("count"):
        return ["  late iterations: none"]
    out = [
        (
            f"  late iterations (latency >= p{late['percentile']:g} = {fmt_us(late['threshold_ns'])} us): "
            f"{late['count']:,}, {fmt_us(late['latency_excess_ns'])} us over the typical (<= median) on average; "
            f"other work on the pipeline's CPUs during them, per late iteration (typical):"
        )
    ]
    shown = [x for x in late["sources"] if x["excess_ns"] > 0][:6]
    for x in shown:
        out.append(
            f"    {x['kind']}:{x['name']:28} {fmt_us(x['late_ns']):>8} us ({fmt_us(x['typical_ns'])}), "
            f"in {x['late_iterations_hit']} of {late['count']}"
        )
    if not shown:
        out.append(
            "    nothing more than in typical iterations (the delay is not another context on these CPUs: "
            "memory, the hypervisor, the pipeline itself)"
        )
    else:
        out.append(f"    explains {late['explained_share'] * 100:.0f}% of the extra latency")
    return out


def bench_table(rows: list[BenchRow], title: str) -> str:
    """The thesis's result-table layout: one row per configuration, times in us."""
    head = f"{'configuration':24} {'mean':>10} {'σ':>9} {'max':>10} {'p50':>10} {'p99':>10} {'p99.9':>10}"
    out = [title, head, "-" * len(head)]
    for r in rows:
        s = r["latency"]
        out.append(
            f"{r['heuristic'] + ' + ' + r['memory']:24} {fmt_us(s['mean']):>10} {fmt_us(s['sd']):>9} "
            f"{fmt_us(s['max']):>10} {fmt_us(s['p50']):>10} {fmt_us(s['p99']):>10} {fmt_us(s['p999']):>10}"
        )
    out.append("times in us; σ = standard deviation of the per-iteration latency")
    why = [r for r in rows if r.get("late_top")]
    if why:
        out.append(
            "late iterations (>= p99), what took the most time on the pipeline's CPUs, per late iteration (typical):"
        )
        for r in why:
            t = r["late_top"]
            if t is None:
                continue
            out.append(
                f"  {r['heuristic'] + ' + ' + r['memory']:22} {t['kind']}:{t['name']} {fmt_us(t['late_ns'])} us "
                f"({fmt_us(t['typical_ns'])})"
            )
    return "\n".join(out)
