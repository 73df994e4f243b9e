"""`tune verify`'s terminal text and its before/after HTML page (report/templates/tune.html.j2)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from jitterscope import plotting
from jitterscope.report.page import Column, Figure, render_page
from jitterscope.report.page import write_page as write_html
from jitterscope.units import format_ns

if TYPE_CHECKING:
    from jitterscope.tune.verify_data import Analysis


def _ci(ci: list[float | None]) -> str:
    return f"[{ci[0]:,.1f}, {ci[1]:,.1f}]" if None not in ci else "[–]"


def _q(q: float | None) -> str:
    return "q=–" if q is None else f"q={q:.2g}"


def render_text(r: Analysis) -> str:
    lines = [
        (
            f"Targeted sources (before -> after, compare's tests, Benjamini-Hochberg over {r['tests']} tests, "
            f"alpha {r['alpha']:g}):"
        )
    ]
    for t in r["targets"]:
        b, a = t["before"], t["after"]
        ratio = "" if t["rate_ratio"] is None else f", rate x{t['rate_ratio']:.2f} {_ci(t['ci95'])}"
        mark = "ok " if t["down"] else ("NO " if t["testable"] else " ? ")
        lines.append(
            f"  {mark} {t['source']}: {b['ppm']:,.1f} -> {a['ppm']:,.1f} ppm, "
            f"{b['count']:,} -> {a['count']:,} times, p99 {format_ns(b['p99_ns'])} -> "
            f"{format_ns(a['p99_ns'])}{ratio}, {_q(t['q'])}"
        )
        plan = f"planned: {t['expect']}" + (
            f" (x{t['factor']:.2g})" if t["expect"] == "fewer" and t["factor"] is not None else ""
        )
        lines.append(f"       {t['verdict']}; {plan}; by {', '.join(t['knobs'])}")
    lines.append("")
    lines.append("Overall noise per CPU (mean over blocks, 95% bootstrap interval):")
    for c, o in r["overall"].items():
        lines.append(
            f"  CPU {c}: {o['base_ppm']:,.1f} {_ci(o['base_ci95'])} -> {o['new_ppm']:,.1f} "
            f"{_ci(o['new_ci95'])} ppm ({o['delta_ppm']:+,.1f} ppm, {_q(o['q'])})"
        )
    if r["side_effects"]:
        lines += ["", "Other sources got worse: " + "; ".join(r["side_effects"])]
    for n in r["notes"] + r["not_compared"]:
        lines.append(f"note: {n}")
    lines.append("")
    lines.append(_kept(r))
    if r.get("boot", {}).get("cmdline"):
        lines.append(f"Boot parameters still needed (a reboot): {r['boot']['cmdline']}")
    lines.append(f"Runs: {r['before']} -> {r['after']}; page: {Path(r['out']) / 'verify.html'}")
    rare = f" ({r['untestable']} too rare to test)" if r["untestable"] else ""
    lines.append(
        f"VERIFIED: every testable targeted source went down{rare}"
        if r["ok"]
        else f"NOT VERIFIED: a targeted source did not go down significantly, or none was testable{rare} (exit 1)"
    )
    return "\n".join(lines)


def _kept(r: Analysis) -> str:
    if r.get("reverted") is not None:
        back = all(x["back"] for x in r["reverted"])
        return (
            "Reverted: every knob re-read equal to its original"
            if back
            else "Reverted, but some knobs read otherwise: "
            + ", ".join(f"{x['knob']}={x['now']} (was {x['original']})" for x in r["reverted"] if not x["back"])
        )
    return f"The changes stay, recorded in {r['record']}: `jitterscope tune revert` undoes them"


def _figure(r: Analysis) -> Figure | None:
    if not r["targets"]:
        return None
    plt = plotting.pyplot()
    names = [t["source"] for t in r["targets"]]
    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots(figsize=(6.5, 0.45 * len(names) + 1.2))
        y = range(len(names))
        ax.barh([i + 0.2 for i in y], [t["before"]["ppm"] for t in r["targets"]], 0.4, label="before", color="#999")
        ax.barh([i - 0.2 for i in y], [t["after"]["ppm"] for t in r["targets"]], 0.4, label="after", color="#2a7")
        ax.set_yticks(list(y), names)
        ax.invert_yaxis()
        ax.set_xlabel("noise on the measured CPUs (ppm)")
        ax.legend(frameon=False)
        fig.tight_layout()
        return Figure("targets", "Targeted sources before and after", plotting.svg_text(fig))


def write_page(r: Analysis, path: Path) -> Path:
    data = {
        "headline": f"{'VERIFIED' if r['ok'] else 'NOT VERIFIED'}: {sum(t['down'] for t in r['targets'])} of "
        f"{sum(t['testable'] for t in r['targets'])} testable targeted sources went down significantly"
        + (f" ({r['untestable']} more too rare to test)" if r["untestable"] else ""),
        "alpha": r["alpha"],
        "target_rows": [
            [
                t["source"],
                t["before"]["ppm"],
                t["after"]["ppm"],
                t["before"]["count"],
                t["after"]["count"],
                t["q"],
                t["short"],
                ", ".join(t["knobs"]),
            ]
            for t in r["targets"]
        ],
        "overall_rows": [
            [f"CPU {c}", o["base_ppm"], _ci(o["base_ci95"]), o["new_ppm"], _ci(o["new_ci95"]), o["q"]]
            for c, o in r["overall"].items()
        ],
        "knob_rows": [[k["knob"], k["before"], k["value"], k["now"]] for k in r["applied"]],
        "kept": _kept(r),
        "side_effects": r["side_effects"],
        "boot": r.get("boot", {}).get("cmdline"),
        "unaddressed": r.get("unaddressed", []),
    }
    fig = _figure(r)
    figs = [fig] if fig else []
    html = render_page(
        "tune.html.j2",
        title="jitterscope tune verify",
        data=data,
        figures=figs,
        nav=[("targets", "Targets"), ("overall", "Overall"), ("knobs", "Knobs"), ("rest", "Still to do")],
        warnings=r["notes"],
        target_columns=[
            Column("source"),
            Column("before ppm", "ppm"),
            Column("after ppm", "ppm"),
            Column("before count", "int"),
            Column("after count", "int"),
            Column("q", "{:.2g}"),
            Column("result"),
            Column("knobs"),
        ],
        overall_columns=[
            Column("CPU"),
            Column("before ppm", "ppm"),
            Column("95% CI"),
            Column("after ppm", "ppm"),
            Column("95% CI"),
            Column("q", "{:.2g}"),
        ],
        knob_columns=[Column("knob"), Column("before"), Column("set to"), Column("re-read")],
    )
    return write_html(path, html, figs)
