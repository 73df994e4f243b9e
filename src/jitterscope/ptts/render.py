"""The terminal text of `jitterscope ptts`, from the results of ptts/analysis.py."""

from __future__ import annotations

from jitterscope.ptts import stats
from jitterscope.ptts.analysis import Report, Series, Sweep, Tree
from jitterscope.ptts.exact import Distribution, TreeNode
from jitterscope.ptts.model import Model
from jitterscope.ptts.results import Approximation


def fmt_p(p: float) -> str:
    if p == 0:
        return "0"
    return f"{p:.4g}" if p >= 1e-3 else f"{p:.3e}"


def describe(model: Model) -> str:
    lines = [f"PTTS model {model.path or model.name}: {len(model.components)} components, resolution {model.fmt(1)}"]
    w = max(len(c.name) for c in model.components)
    for c in model.components:
        e = c.etp
        off = c.offset % c.period
        off_note = f" (= {model.fmt(off)} mod period)" if off != c.offset else ""
        points = f"{len(e.support)} point{'s' if len(e.support) != 1 else ''}"
        lines.append(
            f"  {c.name:<{w}}  period {model.fmt(c.period):>10}  offset {model.fmt(c.offset):>9}{off_note}  "
            f"etp {model.fmt(e.lo)}..{model.fmt(e.hi)}, mean {model.fmt(e.mean())} ({points})"
        )
    return "\n".join(lines)


def latency_text(
    model: Model,
    dist: Distribution,
    loss: float | None,
    loss_by: dict[str, float],
    deadline: int | None,
    miss: float | None,
    header: str,
) -> str:
    s = stats.summary(dist)
    f = model.fmt
    lines = [
        header,
        f"  mean {f(s['mean'])}   min {f(s['min'])}   max {f(s['max'])}",
        f"  p50 {f(s['p50'])}   p90 {f(s['p90'])}   p99 {f(s['p99'])}   p99.9 {f(s['p999'])}",
    ]
    if deadline is not None and miss is not None:
        lines.append(f"  deadline miss: P(latency > {f(deadline)}) = {fmt_p(miss)}")
    if loss is not None:
        where = ", ".join(f"{k} {fmt_p(v)}" for k, v in loss_by.items() if v > 0)
        lines.append(
            f"  frame loss: P(a frame's container and the next one's are read by the same triggering, "
            f"so one is overwritten) = {fmt_p(loss)}" + (f"  [at the input of: {where}]" if where else "")
        )
    return "\n".join(lines)


def report_text(rep: Report) -> str:
    model = rep.model
    how = "exact" if rep.simulation is None else f"Monte Carlo, {rep.simulation['iterations']:,} frames"
    header = (
        f"end-to-end latency ({how}, over the {rep.estimate.trees:,} triggerings of "
        f"{model.components[0].name} in the hyper-period)"
    )
    lines = [latency_text(model, rep.latency, rep.loss, rep.loss_by, rep.opts.deadline, rep.miss, header)]
    if rep.sim is not None and rep.simulation is not None:
        b = rep.simulation
        lines.append(
            f"  simulated overwrites counting every frame, consecutive or not: {fmt_p(b['loss_any_overwrite'])}"
        )
        if rep.exact is not None:
            lines.append(
                f"distance to the exact result: Kolmogorov {b['kolmogorov']:.4g} (95% DKW band for "
                f"{b['iterations']:,} frames: {b['dkw95']:.4g}), total variation {b['total_variation']:.4g}; "
                f"exact loss {fmt_p(rep.exact.loss or 0.0)}"
            )
            lines.append(f"simulation took {rep.sim.seconds:.3g} s, exact analysis {rep.exact.seconds:.3g} s")
        else:
            lines.append(f"simulation took {rep.sim.seconds:.3g} s (exact analysis over --max-time: no distance)")
    else:
        lines.append(f"analysis took {rep.seconds:.3g} s")
    if rep.approximation is not None:
        lines.append(approximation_text(model, rep.approximation))
    return "\n".join(lines)


def approximation_text(model: Model, block: Approximation) -> str:
    e = block["error"]
    if e["kolmogorov"] == 0 and e["total_variation"] == 0 and e["against"] == "exact" and "mean_shift" not in e:
        return "approximation error: none (periods unchanged)"
    if e["against"] == "exact":
        return (
            f"approximation error against the exact result of the original periods: Kolmogorov "
            f"{e['kolmogorov']:.4g}, mean shift {e['mean_shift']:+.4g} {model.unit}; original loss "
            f"{fmt_p(e['loss_original'] or 0.0)}"
        )
    return (
        f"approximation error against a simulation of the original periods ({e['iterations']:,} frames; "
        f"exact analysis of the original is over --max-time): Kolmogorov {e['kolmogorov']:.4g} "
        f"(the simulation itself is within {e['dkw95']:.3g} of the truth with 95% confidence), mean shift "
        f"{e['mean_shift']:+.4g} {model.unit}"
    )


def figure_series(rep: Report) -> list[Series]:
    """The distributions the PMF and CDF figures draw, first on top (as thesis figure 5.11)."""
    if rep.simulation is None:  # the exact method
        series: list[Series] = [("exact", rep.latency)]
    else:
        series = [(f"simulation ({rep.simulation['iterations']} frames)", rep.latency)]
        if rep.exact is not None:
            series.insert(0, ("exact", rep.exact.latency))
    if rep.reference is not None:
        series[0] = (f"approximate (adapted periods, {rep.estimate.trees:,} trees)", rep.latency)
        series.append(rep.reference)
    return series


def sweep_text(sw: Sweep) -> str:
    model, fld = sw.model, sw.field
    comp = model.components[sw.index]
    lines = [describe(model)]
    if fld == "offset" and any(v >= comp.period or v < 0 for v in sw.values):
        lines.append(f"note: offsets act modulo the period of {comp.name} ({model.fmt(comp.period)})")
    head = f"{sw.label + ' (' + model.unit + ')':>18} {'trees':>9} {'mean':>9} {'p50':>9} {'p99':>9} {'max':>9}"
    if sw.deadline is not None:
        head += f" {'P(>' + model.fmt(sw.deadline).replace(' ', '') + ')':>12}"
    lines.append(head + f" {'loss':>10}")
    for pt, sm in zip(sw.points, sw.sums):
        at = pt["offset"] if fld == "offset" else pt["period"]
        row = f"{at:>18.6g} {pt['trees']:>9,} {sm['mean']:>9.5g} {sm['p50']:>9.5g} {sm['p99']:>9.5g} {sm['max']:>9.5g}"
        if sw.deadline is not None:
            row += f" {fmt_p(pt['deadline_miss']):>12}"
        lines.append(row + f" {fmt_p(pt['loss_probability'] or 0.0):>10}")
    lines.append(f"analysis took {sw.seconds:.3g} s")
    return "\n".join(lines)


def tree_text(t: Tree) -> str:
    model, names, root = t.model, t.names, t.root
    lines = [
        f"latency tree {t.k} of {t.count}: triggering of {names[0]} at {model.fmt(root.time)} "
        f"(thesis figure 5.4: (component, instant), edge = probability that this triggering consumes the "
        f"container)"
    ]

    def show(n: TreeNode, depth: int, p: float) -> None:
        lead = "  " * depth + (f"--{p:.4g}--> " if depth else "")
        lines.append(f"{lead}({names[n.component]}, {model.fmt(n.time)})")
        for q, c in n.children:
            show(c, depth + 1, q)

    show(root, 0, 1.0)
    lines.append(
        f"flattened (thesis figure 5.5: output instant, probability; latency = instant - {model.fmt(root.time)}):"
    )
    lines += [f"  {model.fmt(tt)}  {p:.6g}   latency {model.fmt(tt - root.time)}" for tt, p in sorted(t.flat.items())]
    return "\n".join(lines)
