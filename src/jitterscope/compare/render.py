"""Terminal rendering of a comparison (the data comes from compare_runs)."""

from __future__ import annotations

from collections.abc import Callable

from jitterscope.compare.results import Comparison, SourceRow
from jitterscope.humanize import count, number, seconds
from jitterscope.humanize import duration_ns as format_ns


def _q(q: float | None) -> str:
    return "q=–" if q is None else f"q={q:.2g}"


def _label(r: SourceRow) -> str:
    names = r.get("names") or []
    extra = f" ({', '.join(names)})" if names and names != [r["name"]] else ""
    return f"{r['kind']}:{r['name']}{extra}"


def _events(r: SourceRow) -> str:
    """The source's own event rate, beside the detour rate compare tests (compare/events.py)."""
    e = r.get("events")
    if not e:
        return ""
    ratio = f" x{e['ratio']:.2f}" if e["ratio"] is not None else ""
    return f"; its events {number(e['base_per_s'])} -> {number(e['new_per_s'])}/s{ratio}"


def render_compare(res: Comparison) -> str:
    b, n = res["runs"]["base"], res["runs"]["new"]
    th = res["thresholds"]
    lines = [
        f"BASE {b['id']} ({b['host']}, {seconds(b['duration_s'] or 0.0)})",
        f"NEW  {n['id']} ({n['host']}, {seconds(n['duration_s'] or 0.0)})",
        f"compared CPUs: {', '.join(map(str, res['compared_cpus']))}",
    ]
    lines += [f"not compared: {x}" for x in res["not_compared"]]
    lines += [f"note: {x}" for x in res["notes"]]
    lines.append("")
    lines.append("Total noise per CPU")
    for c, t in res["total"].items():
        ratio = f"x{t['ratio']:.2f}" if t["ratio"] is not None else "new"
        flag = "  REGRESSION" if t["regression"] else ("  significant" if t["significant"] else "")
        flag = flag if t.get("tested", True) else "  (not tested: see 'not compared')"
        lines.append(
            f"  CPU {c}: {number(t['base_ppm'])} -> {number(t['new_ppm'])} ppm "
            f"({'+' if t['delta_ppm'] >= 0 else ''}{number(t['delta_ppm'])} ppm, {ratio}, {_q(t['q'])}){flag}"
        )

    def block(title: str, rows: list[SourceRow], fmt: Callable[[SourceRow], str]) -> None:
        lines.append("")
        lines.append(f"{title} ({len(rows)})" if rows else f"{title}: none")
        for r in rows:
            flag = "  REGRESSION" if r["regression"] else ("" if r["significant"] else "  (not significant)")
            flag = flag if r.get("tested", True) else "  (not tested: see 'not compared')"
            lines.append("  " + fmt(r) + flag)

    block(
        "New sources",
        res["new"],
        lambda r: (
            f"{_label(r)}: {count(r['new']['count'], 'time')} ({number(r['new']['rate_hz'])}/s per CPU), "
            f"median {format_ns(r['new']['median_ns'])}, "
            f"{'+' if r['delta_ppm'] >= 0 else ''}{number(r['delta_ppm'])} ppm, "
            f"{_q(r['rate']['q'])}{_events(r)}"
        ),
    )
    block(
        "Gone sources",
        res["gone"],
        lambda r: (
            f"{_label(r)}: was {count(r['base']['count'], 'time')}, "
            f"{number(r['base']['ppm'])} ppm, {_q(r['rate']['q'])}"
        ),
    )

    def changed(r: SourceRow) -> str:
        parts = [f"{_label(r)} {r['direction']}: {number(r['base']['ppm'])} -> {number(r['new']['ppm'])} ppm"]
        rr = r["rate"]
        if rr["ratio"] is not None:
            parts.append(
                f"detour rate x{rr['ratio']:.2f} [{rr['ci95'][0]:.2f}, {rr['ci95'][1]:.2f}] {_q(rr['q'])}"
                + _events(r).replace("; its", ", its")
            )
        d = r["duration"]
        if d is not None:
            parts.append(
                f"median {format_ns(r['base']['median_ns'])} -> {format_ns(r['new']['median_ns'])} "
                f"(Cliff's delta {d['cliffs_delta']:+.2f}, {_q(d['q'])})"
            )
        return "; ".join(parts)

    block(f"Changed sources (q < {th['alpha']:g})", res["changed"], changed)
    lines.append("")
    basis = res.get("basis") or {}
    if res["regression"]:
        lines.append("REGRESSION: " + "; ".join(res["regressions"]))
    elif not basis.get("totals_tested", True) and not basis.get("sources", True):
        lines.append("nothing tested: the runs were measured differently (see 'not compared')")
    else:
        lines.append("no regression")
    if res["tests"]:
        lines.append(
            f"(regression = q < {th['alpha']:g} after Benjamini-Hochberg over {count(res['tests'], 'test')}, "
            f">= {th['min_ppm']:g} ppm more noise, and >= {th['min_ratio']:g}x the base)"
        )
    return "\n".join(lines)
