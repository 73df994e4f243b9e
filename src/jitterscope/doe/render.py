"""Render an analysis (plain data from `analysis.analyze`) as text tables, JSON and SVG."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from jitterscope import plotting
from jitterscope.doe.design import roman
from jitterscope.doe.results import Allocation, Analysis, GroupShare


def _num(v: float | None, unit: str = "") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    a = abs(v)
    s = f"{v:.4g}" if (a >= 1e-3 or a == 0) and a < 1e6 else f"{v:.3e}"
    return f"{s} {unit}".rstrip()


def _effect_name(e: str, names: dict[str, str]) -> str:
    """'AB' -> 'AB (cache x timers)' so tables read without a legend."""
    if len(e) == 1:
        return f"{e} ({names[e]})"
    return e


def _header(a: Analysis) -> list[str]:
    d = a["design"]
    out: list[str] = []
    hdr = a.get("experiment", {})
    if hdr:
        out.append(f"experiment {hdr.get('name')!r} on {hdr.get('host')} ({hdr.get('kernel')})")
        out.append(f"response: {hdr.get('response')}")
    if d["kind"] == "full":
        out.append(f"design: 2^{d['k']} full factorial, {a['allocation']['replications']} replications")
    else:
        out.append(
            f"design: 2^({d['k']}-{d['p']}) fractional, resolution {roman(d['resolution'])}, "
            f"{d['defining_relation']}; effects below carry their aliases"
        )
    out.append(
        "factors: "
        + "  ".join(f"{f['letter']}={f['name']} ({f.get('low', '-')} / {f.get('high', '+')})" for f in a["factors"])
    )
    return out + [""]


def _treatments(a: Analysis) -> list[str]:
    letters = [f["letter"] for f in a["factors"]]
    out = [
        "Treatments (Yates order)",
        f"  {'T':<4}{'label':<10}"
        + "".join(f"{c:>3}" for c in letters)
        + f"{'mean':>12}{'median':>12}{'sd':>12}{'n':>4}  outliers",
    ]
    for i, t in enumerate(a["treatments"]):
        signs = "".join(f"{'+' if t['levels'][c] > 0 else '-':>3}" for c in letters)
        ol = ", ".join(_num(o["value"]) for o in t["outliers"]) or "-"
        out.append(
            f"  {'T' + str(i + 1):<4}{t['label']:<10}{signs}{_num(t['mean']):>12}{_num(t['median']):>12}"
            f"{_num(t['sd']):>12}{len(t['values']):>4}  {ol}"
        )
    return out + [""]


def _allocation(al: Allocation, title: str) -> list[str]:
    """One allocation-of-variation table (additive, or of log10(y))."""
    conf = al["confidence"]
    out = [title]
    if al.get("constant"):
        return [*out, f"  the response was {_num(al['q0'])} in every run: no variation to allocate", ""]
    w = max([12, *(len(e["label"]) + 2 for e in al["effects"])])
    ci_head = f"{int(round(conf * 100))}% CI of q" if al["s_q"] is not None else ""
    out.append(f"  {'effect':<{w}}{'q':>12}  {ci_head:<27}{'% variation':>12}  significant")
    for e in [al["mean"], *al["effects"]]:
        ci = f"({_num(e['ci'][0])}, {_num(e['ci'][1])})" if "ci" in e else ""
        pct = f"{e['percent']:.2f}%" if e["percent"] is not None else ""
        sig = ("yes" if e["significant"] else "no") if "significant" in e and e["effect"] != "I" else ""
        extra = (
            ""
            if "ratio" not in e
            else f"  geometric mean {_num(e['ratio'])}"
            if e["effect"] == "I"
            else f"  high/low x{e['ratio']:.4g}"
        )
        out.append(f"  {e['label']:<{w}}{_num(e['q']):>12}  {ci:<27}{pct:>12}  {sig}{extra}")
    if al["sse"] is not None:
        out.append(
            f"  {'error':<{w}}{'':>12}  {'':<27}{al['error_percent']:>11.2f}%  "
            f"(SSE {_num(al['sse'])}, s_e {_num(al['s_e'])}, {al['dof_error']} dof)"
        )
    else:
        out.append(f"  {'error':<{w}}  no replications: error and confidence intervals cannot be estimated")
    out.append(f"  {'total':<{w}}{'':>12}  {'':<27}{'100.00%':>12}  (SST {_num(al['sst'])})")
    return out + [""]


def _influence(a: Analysis) -> list[str]:
    """The top three contributions, as Vicente & Matias's tables show them."""
    names = {f["letter"]: f["name"] for f in a["factors"]}
    al = a["allocation"]
    out = [
        "Factors' influence on the response variation (top 3)",
        f"  {'Factor / Interaction':<32}Percentage of Contribution",
    ]
    for e in sorted(al["effects"], key=lambda e: -(e["percent"] or 0.0))[:3]:
        nm = e["label"] if len(e["effect"]) > 1 or "+" in e["label"] else _effect_name(e["effect"], names)
        out.append(f"  {nm:<32}{e['percent']:.2f}%")
    if al["error_percent"] is not None:
        out.append(f"  {'(unexplained: error)':<32}{al['error_percent']:.2f}%")
    return out + [""]


def _group_comparisons(a: Analysis, gc: GroupShare) -> list[str]:
    out = [f"Share of significant pairwise comparisons between groups (grouped by {', '.join(gc['by'])})"]
    for nm, g, mem in zip(gc["names"], gc["groups"], gc["members"]):
        lv = ", ".join(f"{b}{'+' if s > 0 else '-'}" for b, s in zip(gc["by"], g))
        out.append(f"  {nm}: {lv}  treatments {', '.join(a['treatments'][m]['label'] for m in mem)}")
    out.append("  " + " " * 6 + "".join(f"{nm:>9}" for nm in gc["names"]))
    for i, nm in enumerate(gc["names"]):
        cells = []
        for j in range(len(gc["names"])):
            v = gc["share"][i][j]
            cells.append(
                f"{'':>9}"
                if j < i
                else (f"{'n/a':>9}" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:>8.1f}%")
            )
        out.append(f"  {nm:<6}" + "".join(cells))
    return out


def _tests(a: Analysis) -> list[str]:
    """Kruskal-Wallis across treatments, Dunn-Holm pairs and the groups' share of them."""
    al = a["allocation"]
    kw = a["kruskal_wallis"]
    verdict = "differ" if kw["significant"] else "do not differ significantly"
    out = [
        f"Kruskal-Wallis across {len(a['treatments'])} treatments: H = {kw['h']:.4g}, df = {kw['df']}, "
        f"p = {kw['p']:.3g}: treatments {verdict} at alpha = {1 - al['confidence']:.2g}"
    ]
    dh = a.get("dunn_holm")
    gc = a.get("group_comparisons")
    if dh and gc:
        total = len(dh["labels"]) * (len(dh["labels"]) - 1) // 2
        out.append(
            f"Dunn's pairwise test, Holm-adjusted: {dh['significant_pairs']} of {total} treatment pairs "
            f"differ (p < {dh['alpha']:.2g})"
        )
        out.append("")
        out += _group_comparisons(a, gc)
    elif not dh:
        out.append("Dunn's pairwise test needs replications; skipped")
    return out


def _outliers(a: Analysis) -> list[str]:
    unit = a.get("unit", "")
    n_out = sum(len(t["outliers"]) for t in a["treatments"])
    out = [
        "",
        f"Outliers (Tukey fences, per treatment; kept in every statistic above): {n_out}"
        + ("" if n_out else " (needs 4+ replications to judge)" if a["allocation"]["replications"] < 4 else ""),
    ]
    for t in a["treatments"]:
        for o in t["outliers"]:
            out.append(f"  treatment {t['label']}: run {o['run']} y = {_num(o['value'], unit)}")
    return out


def text(a: Analysis) -> str:
    """The analysis as text: design, treatments, allocation tables, influence, tests, outliers."""
    out = _header(a) + _treatments(a)
    out += _allocation(a["allocation"], "Allocation of variation (Jain's sign-table method)")
    if "allocation_log" in a:
        out += _allocation(a["allocation_log"], "Multiplicative model: allocation of variation of log10(y)")
    out += _influence(a) + _tests(a) + _outliers(a)
    return "\n".join(out) + "\n"


def to_json(a: Analysis) -> str:
    def clean(x: Any) -> Any:
        if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    return json.dumps(clean(a), indent=2)


def boxplot_svg(a: Analysis, path: Path) -> None:
    """One box per treatment in Yates order, every replication drawn as a point."""
    plt = plotting.pyplot()
    ts = a["treatments"]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.7 * len(ts) + 2), 4))
    data = [t["values"] for t in ts]
    ax.boxplot(data, showfliers=False)
    rng = np.random.default_rng(0)
    for i, t in enumerate(ts):
        xs = i + 1 + rng.uniform(-0.12, 0.12, len(t["values"]))
        ax.plot(xs, t["values"], "o", ms=3, alpha=0.7, color="C0")
        for o in t["outliers"]:
            ax.plot(i + 1, o["value"], "x", color="C3", ms=7)
    ax.set_xticks(range(1, len(ts) + 1), [t["label"] for t in ts], rotation=45 if len(ts) > 8 else 0)
    unit = a.get("unit") or ""
    ax.set_ylabel(f"response ({unit})" if unit else "response")
    ax.set_xlabel("treatment (Yates order; letters = factors at their high level)")
    name = a.get("experiment", {}).get("name", "")
    ax.set_title(f"{name}: response per treatment" if name else "response per treatment")
    fig.tight_layout()
    plotting.save(fig, path)
