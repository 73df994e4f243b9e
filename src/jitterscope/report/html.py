"""Render the report's plain data and figures into one self-contained HTML page.

CSS, JavaScript and SVG are inlined and a Content-Security-Policy forbids any
network access, so the file opens anywhere (mail attachment, air-gapped node).
"""

from __future__ import annotations

from html import escape
from importlib import resources
from typing import Any

from jitterscope.report.figures import KIND_COLORS, inline_svg
from jitterscope.units import format_ns


def _asset(name: str) -> str:
    return resources.files("jitterscope.report").joinpath("assets", name).read_text(encoding="utf-8")


def _fill(template: str, values: dict[str, str]) -> str:
    out = template
    for k, v in values.items():
        out = out.replace("{{" + k + "}}", v)
    return out


def _e(x: Any) -> str:
    return escape("" if x is None else str(x))


def _num(v: float, text: str) -> str:
    return f'<td class="num" data-v="{v}">{_e(text)}</td>'


def _kind(kind: str) -> str:
    return f'<span class="kind" style="background:{KIND_COLORS.get(kind, "#555")}"></span>{_e(kind)}'


def meta_table(h: dict[str, Any]) -> str:
    tr = h["tracing"]
    if tr["enabled"]:
        tracing = f'<span class="ok">on</span> ({_e(tr.get("events") or 0)} kernel events, clock {_e(tr.get("clock"))})'
    else:
        tracing = f'<span class="bad">off</span>: {_e(tr.get("reason"))}'
    lost = h["lost_events"]
    lost_html = '<span class="ok">0</span>' if not lost else f'<span class="bad">{lost:,}</span>'
    if lost and h["lost_by_cpu"]:
        lost_html += " (" + ", ".join(f"CPU {_e(c)}: {_e(n)}" for c, n in h["lost_by_cpu"].items()) + ")"
    rows = [
        ("Host", _e(h["host"])), ("Kernel", _e(h["kernel"])),
        ("CPU model", _e(h["cpu_model"])), ("Virtualization", _e(h["virtualization"] or "none (bare metal)")),
        ("Command", _e(h["command_line"])), ("Start", _e(h["start"])),
        ("Duration", f'{h["duration_s"]:.3g} s' + (" (interrupted)" if h["interrupted"] else "")),
        ("CPUs", _e(", ".join(map(str, h["cpus"])))),
        ("Threshold", _e(format_ns(float(h["threshold_ns"] or 0)))),
        ("Tracing", tracing), ("Lost events", lost_html), ("Clocksource", _e(h["clocksource"])),
    ]
    return '<table class="meta">' + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def cpu_table(cpus: list[dict[str, Any]]) -> str:
    worst = max((c.get("noise_ppm", 0.0) for c in cpus), default=0.0) or 1.0
    rows = []
    for c in cpus:
        ppm = float(c.get("noise_ppm", 0.0))
        top = c.get("top_source")
        top_html = f'{_kind(top["kind"])} {_e(top["name"])} ({top["share"] * 100:.0f}%)' if top else "—"
        noise, n, p99, mx, res = (c.get(k, 0) for k in ("noise_ns", "detours", "p99_ns", "max_ns", "resolution_ns"))
        cells = [
            f'<td>CPU {c["cpu"]}</td>',
            f'<td class="num" data-v="{ppm}"><span class="bar" style="width:{60 * ppm / worst:.1f}px"></span>{ppm:,.1f}</td>',
            _num(ppm / 1e4, f"{ppm / 1e4:.3g}%"), _num(noise, format_ns(noise)), _num(n, f"{n:,}"),
            _num(p99, format_ns(p99)), _num(mx, format_ns(mx)), _num(res, format_ns(res)), f"<td>{top_html}</td>",
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = ("<tr><th>CPU</th><th class=num>noise ppm</th><th class=num>%</th><th class=num>noise</th>"
            "<th class=num>detours</th><th class=num>p99</th><th class=num>max</th>"
            "<th class=num>resolution</th><th>top source</th></tr>")
    return f'<table class="sortable"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def sources_table(sources: list[dict[str, Any]], tracing: bool) -> str:
    if not sources:
        return ('<p class="warning">No sources: attribution is off for this run.</p>' if not tracing
                else "<p>No traced source took time inside a detour.</p>")
    top = max(s["share"] for s in sources) or 1.0
    rows = []
    for s in sources:
        per = s.get("period_s")
        per_html = _num(per, format_ns(per * 1e9)) if per else '<td class="num" data-v="1e99">—</td>'
        fns = s.get("functions") or []
        fn_html = f'<div class="fn">runs: {_e(", ".join(fns[:4]))}{" …" if len(fns) > 4 else ""}</div>' if fns else ""
        share = s["share"]
        cells = [
            f'<td>{_kind(s["kind"])}</td><td>{_e(s["name"])}{fn_html}</td>',
            f'<td class="num" data-v="{share}"><span class="bar" style="width:{60 * share / top:.1f}px"></span>'
            f'{share * 100:.1f}%</td>',
            _num(s["total_ns"], format_ns(s["total_ns"])), _num(s["count"], format(s["count"], ",")),
            _num(s["mean_ns"], format_ns(s["mean_ns"])), _num(s["p99_ns"], format_ns(s["p99_ns"])),
            _num(s["max_ns"], format_ns(s["max_ns"])), per_html,
            f'<td>{_e(",".join(map(str, s.get("cpus") or [])))}</td>',
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = ("<tr><th>kind</th><th>source</th><th class=num>share</th><th class=num>total</th>"
            "<th class=num>count</th><th class=num>mean</th><th class=num>p99</th><th class=num>max</th>"
            "<th class=num>period</th><th>CPUs</th></tr>")
    return f'<table class="sortable"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def figure(fig_id: str, caption: str, svg: str) -> str:
    return (f'<figure class="js-figure" id="fig-{fig_id}" data-figure="{fig_id}">'
            f'{inline_svg(svg, fig_id)}<figcaption>{_e(caption)}</figcaption></figure>')


def chains_section(chains: list[dict[str, Any]], figs: dict[str, tuple[str, str]]) -> str:
    if not chains:
        return "<p>No detour held more than one source.</p>"
    rows = "".join(f'<tr><td>{_e(c["label"])}</td>' + _num(c["count"], format(c["count"], ","))
                   + _num(c["total_ns"], format_ns(c["total_ns"])) + _num(c["share"], f"{c['share'] * 100:.1f}%") + "</tr>"
                   for c in chains)
    table = ('<table class="sortable"><thead><tr><th>chain</th><th class=num>detours</th>'
             f'<th class=num>total</th><th class=num>share</th></tr></thead><tbody>{rows}</tbody></table>')
    fig = figure("chains", *figs["chains"]) if "chains" in figs else ""
    return fig + table


def unexplained_section(un: dict[str, Any], figs: dict[str, tuple[str, str]]) -> str:
    per_cpu = ", ".join(f"CPU {c}: {format_ns(n)}" for c, n in un.get("per_cpu_ns", {}).items())
    text = (f'<p><b>{un.get("share", 0) * 100:.1f}%</b> of all noise ({format_ns(un.get("total_ns", 0))} in '
            f'{un.get("count", 0):,} detours, {un.get("whole_detours", 0):,} of them with nothing traced at all) '
            f'is covered by no traced kernel activity. Per CPU: {_e(per_cpu)}.</p>'
            f'<p>Most likely: <b>{_e(un.get("likely"))}</b>.</p>'
            '<p class="how">Small unexplained pieces at the edges of every detour are the cost of entering and '
            'leaving the kernel; whole unexplained detours are time the kernel itself did not see '
            '(hypervisor exits, SMIs).</p>')
    fig = figure("unexplained", *figs["unexplained"]) if "unexplained" in figs else ""
    return text + fig


def render_html(data: dict[str, Any], figs: dict[str, tuple[str, str]]) -> str:
    h = data["header"]
    warnings = "".join(f'<p class="warning">{_e(w)}</p>' for w in h["warnings"])
    grid = lambda prefix: "".join(figure(k, *v) for k, v in figs.items() if k.startswith(prefix))  # noqa: E731
    sections = [("cpus", "CPUs"), ("histograms", "Durations"), ("timeline", "Over time"),
                ("sources", "Sources"), ("chains", "Chains"), ("unexplained", "Unexplained")]
    return _fill(_asset("report.html"), {
        "title": _e(f"jitterscope report: {h['host']} {h['start'] or ''}"),
        "version": _e(h["tool_version"]), "host": _e(h["host"]), "run_id": _e(h["id"]),
        "headline": _e(data["headline"]), "warnings": warnings, "meta_table": meta_table(h),
        "nav": "".join(f'<a href="#{a}">{t}</a>' for a, t in sections),
        "cpu_table": cpu_table(data["cpus"]),
        "histograms": grid("histogram-") or "<p>No detours were recorded.</p>",
        "timelines": grid("timeline-"),
        "sources_table": sources_table(data["sources"], h["tracing"]["enabled"]),
        "sources_fig": figure("sources", *figs["sources"]) if "sources" in figs else "",
        "chains": chains_section(data["chains"], figs),
        "unexplained": unexplained_section(data["unexplained"], figs),
        "css": _asset("report.css"), "js": _asset("report.js"),
    })
