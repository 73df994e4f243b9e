"""Exact end-to-end latency of a chain of time-triggered components (PTTS, seed 003 ch. 5).

Each component of the chain (sensor, processing PC, GPU, display wall...)
triggers on its own timer, reads a one-place buffer (destructive write,
non-destructive read) and takes a random execution time from its profile.
Following every triggering of the first component over one hyper-period
(lcm of the periods) through its latency tree gives the exact distribution of
the end-to-end latency and the probability that a frame is overwritten before
it is read.  The predicted work (seed eq. 5.15) is printed before starting;
analyses predicted to take longer than --max-time are refused with the
estimate, and --approximate adapts the periods to shorten the hyper-period
(seed section 5.7) and reports the change and the error it causes.

Model file reference and worked examples: docs/commands/ptts.md.

EXAMPLES
  jitterscope ptts examples/ptts/thesis-example.yaml
  jitterscope ptts examples/ptts/xray-e.yaml --deadline 160ms --plots out/
  jitterscope ptts examples/ptts/xray-e.yaml --sweep wall.offset=0..80:10 --plots out/
  jitterscope ptts examples/ptts/xray-d.yaml --method simulate --iterations 10000
  jitterscope ptts examples/ptts/config-c.yaml --approximate 0.5s
  jitterscope ptts examples/ptts/thesis-example.yaml --tree 0
  jitterscope ptts examples/ptts/thesis-example.yaml --json > result.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from jitterscope.budget import mem_available
from jitterscope.outpath import check_dir
from jitterscope.units import count_arg, seed_arg

DEFAULT_MAX_TIME = "60s"
DEFAULT_APPROX_TIME = "5s"
MAX_BYTES = 8 * 2**30  # states the exact engine may keep in memory


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", type=Path, metavar="MODEL", help="YAML model file (see docs/commands/ptts.md)")
    p.add_argument("--deadline", metavar="T", help="report P(latency > T); a bare number is in the model's unit")
    p.add_argument("--json", action="store_true", help="print the result as JSON only (notes go to stderr)")
    p.add_argument("--plots", type=Path, metavar="DIR", help="write PMF and CDF (or sweep) figures, SVG and PNG")
    p.add_argument("--method", choices=("exact", "simulate"), default="exact",
                   help="exact analysis (default) or Monte Carlo simulation compared with it")
    p.add_argument("--iterations", type=count_arg(1, 10**9), metavar="N",
                   help="simulated frames (default 10000; with --approximate, for measuring the error: 20000)")
    p.add_argument("--seed", type=seed_arg, metavar="S", help="random seed of the simulation (default: random)")
    p.add_argument("--approximate", nargs="?", const=DEFAULT_APPROX_TIME, metavar="TIME",
                   help=f"adapt periods (seed 5.7) until the analysis is predicted to take at most TIME "
                        f"(default {DEFAULT_APPROX_TIME}); reports the change and the error")
    p.add_argument("--max-time", default=DEFAULT_MAX_TIME, metavar="TIME",
                   help=f"refuse exact analyses predicted to take longer (default {DEFAULT_MAX_TIME})")
    p.add_argument("--sweep", metavar="C.offset=LO..HI:STEP",
                   help="repeat the analysis for each value of a component's offset (or period); "
                        "bare numbers are in the model's unit, e.g. wall.offset=0..80:10")
    p.add_argument("--tree", type=int, metavar="K", help="print the latency tree of the K-th triggering of the first "
                                                          "component (seed figures 5.4, 5.5) and stop")


# ---------------------------------------------------------------------------

def _note(args: argparse.Namespace, text: str) -> None:
    print(text, file=sys.stderr if args.json else sys.stdout, flush=True)


def _latency_json(model, dist, with_pmf: bool = True) -> dict[str, Any]:
    from jitterscope.ptts import stats

    s = stats.summary(dist)
    out: dict[str, Any] = {}
    if with_pmf:
        out["pmf"] = [[t, p] for t, p in zip(model.ticks_to_unit(dist.times).tolist(), dist.probs.tolist())]
    for k in ("mean", "min", "max", "p50", "p90", "p99", "p999"):
        out[k] = model.ticks_to_unit(s[k])
    return out


def _describe(model) -> str:
    lines = [f"PTTS model {model.path or model.name}: {len(model.components)} components, "
             f"resolution {model.fmt(1)}"]
    w = max(len(c.name) for c in model.components)
    for c in model.components:
        e = c.etp
        off = c.offset % c.period
        off_note = f" (= {model.fmt(off)} mod period)" if off != c.offset else ""
        lines.append(f"  {c.name:<{w}}  period {model.fmt(c.period):>10}  offset {model.fmt(c.offset):>9}{off_note}  "
                     f"etp {model.fmt(e.lo)}..{model.fmt(e.hi)}, mean {model.fmt(e.mean())} ({len(e.support)} point{'s' if len(e.support) != 1 else ''})")
    return "\n".join(lines)


def _fmt_p(p: float) -> str:
    if p == 0:
        return "0"
    return f"{p:.4g}" if p >= 1e-3 else f"{p:.3e}"


def _text_result(model, dist, loss, loss_by, deadline, miss, header: str) -> str:
    from jitterscope.ptts import stats

    s = stats.summary(dist)
    f = model.fmt
    lines = [header,
             f"  mean {f(s['mean'])}   min {f(s['min'])}   max {f(s['max'])}",
             f"  p50 {f(s['p50'])}   p90 {f(s['p90'])}   p99 {f(s['p99'])}   p99.9 {f(s['p999'])}"]
    if deadline is not None:
        lines.append(f"  deadline miss: P(latency > {f(deadline)}) = {_fmt_p(miss)}")
    if loss is not None:
        where = ", ".join(f"{k} {_fmt_p(v)}" for k, v in loss_by.items() if v > 0)
        lines.append(f"  frame loss: P(a frame's container and the next one's are read by the same triggering, "
                     f"so one is overwritten) = {_fmt_p(loss)}" + (f"  [at the input of: {where}]" if where else ""))
    return "\n".join(lines)


def _parse_sweep(text: str, model) -> tuple[int, str, list[int]]:
    from jitterscope.errors import UsageError

    m = re.fullmatch(r"\s*(.+)\.(offset|period)\s*=\s*(.+?)\s*", text)
    if not m:
        raise UsageError(f"malformed --sweep {text!r}: use COMPONENT.offset=LO..HI:STEP, e.g. wall.offset=0..80:10")
    idx = model.component_index(m.group(1))
    fld, spec = m.group(2), m.group(3)
    where = f"--sweep {text!r}"
    r = re.fullmatch(r"(.+?)\.\.(.+?)(?::(.+))?", spec)
    if r:
        lo = model.parse_time(r.group(1), where)
        hi = model.parse_time(r.group(2), where)
        step = model.parse_time(r.group(3), where) if r.group(3) else None
        if step is None:
            step = max(1, (hi - lo) // 8) if hi > lo else 1
        if step <= 0 or hi < lo:
            raise UsageError(f"{where}: need LO <= HI and a positive STEP")
        if (hi - lo) // step + 1 > 200:  # counted before the list is built: a huge range is one line, not OOM
            raise UsageError(f"{where}: {(hi - lo) // step + 1:,} values; at most 200")
        values = list(range(lo, hi + 1, step))
    else:
        values = [model.parse_time(v, where) for v in spec.split(",")]
    if len(values) > 200:
        raise UsageError(f"{where}: {len(values)} values; at most 200")
    if fld == "period" and any(v <= 0 for v in values):
        raise UsageError(f"{where}: periods must be positive")
    return idx, fld, values


# ---------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    from jitterscope.errors import JitterscopeError, UsageError
    from jitterscope.ptts import approx, exact, simulate, stats
    from jitterscope.ptts.model import MAX_TICKS, load_model
    from jitterscope.units import parse_duration_s

    if args.plots:  # refused before any work, and no parent directory is created
        check_dir(args.plots, "--plots")
    model = load_model(args.model)
    deadline = model.parse_time(args.deadline, "--deadline") if args.deadline is not None else None
    if deadline is not None and not 0 < deadline < MAX_TICKS:
        raise UsageError(f"--deadline {args.deadline}: must be positive and below 2^62 ticks of the resolution")
    max_time = parse_duration_s(args.max_time, what="--max-time")
    if args.iterations is not None and args.iterations < 1:
        raise UsageError("--iterations must be at least 1")

    if args.tree is not None:
        return _print_tree(args, model)
    if args.sweep:
        return _sweep(args, model, deadline, max_time)

    out: dict[str, Any] = {"model": str(args.model), "unit": model.unit, "method": args.method}
    analysed = model
    adaptation = None
    if args.approximate is not None:
        if args.method != "exact":
            raise UsageError("--approximate goes with the exact method")
        budget = parse_duration_s(args.approximate, what="--approximate")
        adaptation = approx.adapt_periods(model, budget)
        analysed = model.with_periods(adaptation.periods)

    est0 = exact.estimate(model)
    if not args.json:
        print(_describe(model))
    _note(args, f"hyper-period {model.fmt_long(model.hyperperiod())}, {est0.trees:,} latency trees; predicted work "
                f"{est0.predicted_work:,} tree nodes (seed eq. 5.15); exact analysis predicted to take "
                f"{est0.seconds:.3g} s")
    est = est0
    if adaptation is not None:
        _note(args, _adaptation_text(model, adaptation))
        if adaptation.changed:
            est = exact.estimate(analysed)
            _note(args, f"adapted: hyper-period {model.fmt_long(analysed.hyperperiod())}, {est.trees:,} latency trees; "
                        f"predicted work {est.predicted_work:,} tree nodes (seed eq. 5.15); predicted time "
                        f"{est.seconds:.3g} s")
    out.update({"hyperperiod": model.ticks_to_unit(analysed.hyperperiod()), "trees": est.trees,
                "predicted_work": est.predicted_work})

    exact_result = None
    limit = min(MAX_BYTES, mem_available() // 2)  # the shared guard's rule: half of what is available
    fits_memory = est.peak_bytes <= limit
    if args.method == "exact" and not fits_memory:
        raise JitterscopeError(
            f"exact analysis would hold about {est.peak_bytes / 2**30:.3g} GiB of states ({est.trees:,} latency "
            f"trees over a hyper-period of {model.fmt_long(analysed.hyperperiod())}), over the "
            f"{limit / 2**30:.3g} GiB limit; use --approximate to adapt the periods (seed section 5.7) or "
            f"--method simulate")
    if args.method == "exact" or (est.seconds <= max_time and fits_memory):
        if est.seconds > max_time:
            raise JitterscopeError(
                f"exact analysis would take about {est.seconds:.3g} s ({est.trees:,} latency trees over a "
                f"hyper-period of {model.fmt_long(analysed.hyperperiod())}, predicted work {est.predicted_work:,} "
                f"nodes by seed eq. 5.15), over --max-time {args.max_time}; use --approximate to adapt the "
                f"periods (seed section 5.7) or --method simulate, or raise --max-time")
        exact_result = exact.analyse(analysed)

    if args.method == "simulate":
        n = args.iterations or 10000
        sim = simulate.simulate(model, n, seed=args.seed)
        dist, loss, loss_by = sim.latency, sim.loss, {}
        block: dict[str, Any] = {"iterations": n, "seconds": sim.seconds, "seed": args.seed,
                                 "loss_any_overwrite": sim.loss_any, "dkw95": stats.dkw_band(n)}
        if exact_result is not None:
            block.update(stats.distances(sim.latency, exact_result.latency))
            block["exact_seconds"] = exact_result.seconds
            block["exact_loss_probability"] = exact_result.loss
            block["exact_latency"] = _latency_json(model, exact_result.latency, with_pmf=False)
        else:
            block["note"] = "exact analysis over --max-time; no distance computed"
        out["simulation"] = block
        seconds = sim.seconds
    else:
        assert exact_result is not None
        dist, loss, loss_by = exact_result.latency, exact_result.loss, exact_result.loss_by_component
        seconds = exact_result.seconds

    out["latency"] = _latency_json(model, dist)
    miss = None
    if deadline is not None:
        miss = stats.miss_probability(dist, deadline)
        out["deadline"] = model.ticks_to_unit(deadline)
        out["deadline_miss"] = miss
    out["loss_probability"] = loss
    if loss_by:
        out["loss_by_component"] = loss_by
    out["seconds"] = seconds

    reference = None
    if adaptation is not None:
        block, reference = _approximation_error(args, model, adaptation, exact_result, max_time)
        out["approximation"] = block

    if args.json:
        print(json.dumps(out, indent=1))
    else:
        how = ("exact" if args.method == "exact" else f"Monte Carlo, {out['simulation']['iterations']:,} frames")
        header = (f"end-to-end latency ({how}, over the {est.trees:,} triggerings of "
                  f"{model.components[0].name} in the hyper-period)")
        print(_text_result(model, dist, loss, loss_by, deadline, miss, header))
        if args.method == "simulate":
            b = out["simulation"]
            print(f"  simulated overwrites counting every frame, consecutive or not: {_fmt_p(b['loss_any_overwrite'])}")
            if exact_result is not None:
                print(f"distance to the exact result: Kolmogorov {b['kolmogorov']:.4g} (95% DKW band for "
                      f"{b['iterations']:,} frames: {b['dkw95']:.4g}), total variation {b['total_variation']:.4g}; "
                      f"exact loss {_fmt_p(exact_result.loss or 0.0)}")
                print(f"simulation took {sim.seconds:.3g} s, exact analysis {exact_result.seconds:.3g} s")
            else:
                print(f"simulation took {sim.seconds:.3g} s (exact analysis over --max-time: no distance)")
        else:
            print(f"analysis took {seconds:.3g} s")
        if adaptation is not None:
            print(_approximation_text(model, out["approximation"]))

    if args.plots:
        from jitterscope.ptts import plots

        series = [("exact" if args.method == "exact" else f"simulation ({out['simulation']['iterations']} frames)",
                   dist)]
        if args.method == "simulate" and exact_result is not None:
            series.insert(0, ("exact", exact_result.latency))  # as seed figure 5.11: exact, simulation on top
        if reference is not None:
            series[0] = (f"approximate (adapted periods, {est.trees:,} trees)", dist)
            series.append(reference)
        title = f"{model.name}: end-to-end latency"
        files = plots.plot_pmf(args.plots, model, series, title, deadline) + \
            plots.plot_cdf(args.plots, model, series, title, deadline)
        _note(args, "plots: " + ", ".join(str(f) for f in files))
    return 0


# ---------------------------------------------------------------------------

def _adaptation_text(model, ad) -> str:
    if not ad.changed:
        return "approximate: the periods need no change (the exact analysis already fits the budget)"
    parts = []
    for c, old, new in zip(model.components, ad.original, ad.periods):
        if old != new:
            parts.append(f"{c.name} {model.fmt(old)} -> {model.fmt(new)} ({(new - old) / old * 1e6:+.0f} ppm)")
    from jitterscope.ptts.approx import phase_steps

    names = [c.name for c in model.components]
    steps = [f"{b} against {a} every {model.fmt(s0)} -> {model.fmt(s1)}"
             for a, b, s0, s1 in zip(names, names[1:], phase_steps(ad.original), phase_steps(ad.periods))]
    return (f"approximate (seed 5.7): periods moved to multiples of {model.fmt(ad.grid)}: " + "; ".join(parts) +
            f"; latency trees {ad.original_estimate.trees:,} -> {ad.estimate.trees:,}, predicted time "
            f"{ad.original_estimate.seconds:.3g} s -> {ad.estimate.seconds:.3g} s; relative phases: "
            + "; ".join(steps))


def _approximation_error(args, model, ad, approx_result, max_time):
    """Compare the adapted model's exact result with the original: exactly if affordable, else by simulation."""
    from jitterscope.ptts import exact, simulate, stats
    from jitterscope.ptts.approx import phase_steps

    block: dict[str, Any] = {
        "grid": model.ticks_to_unit(ad.grid),
        "periods": [{"component": c.name, "from": model.ticks_to_unit(o), "to": model.ticks_to_unit(n),
                     "change": model.ticks_to_unit(n - o), "relative": (n - o) / o}
                    for c, o, n in zip(model.components, ad.original, ad.periods)],
        "phase_steps": [{"components": [a.name, b.name], "from": model.ticks_to_unit(s0),
                         "to": model.ticks_to_unit(s1)}
                        for a, b, s0, s1 in zip(model.components, model.components[1:],
                                                phase_steps(ad.original), phase_steps(ad.periods))],
        "hyperperiod_from": model.ticks_to_unit(model.hyperperiod()),
        "trees_from": ad.original_estimate.trees,
        "predicted_seconds_from": ad.original_estimate.seconds,
    }
    if not ad.changed:
        block["error"] = {"against": "exact", "kolmogorov": 0.0, "total_variation": 0.0}
        return block, None
    ref_dist = None
    if ad.original_estimate.seconds <= max_time:
        ref = exact.analyse(model)
        err = {"against": "exact", **stats.distances(approx_result.latency, ref.latency),
               "loss_original": ref.loss}
        ref_dist = ("original periods, exact", ref.latency)
        ref_mean = stats.summary(ref.latency)["mean"]
    else:
        n = args.iterations or 20000
        sim = simulate.simulate(model, n, seed=args.seed)
        err = {"against": "simulation", "iterations": n, **stats.distances(approx_result.latency, sim.latency),
               "dkw95": stats.dkw_band(n), "loss_original_simulated": sim.loss}
        ref_dist = (f"original periods, simulation ({n} frames)", sim.latency)
        ref_mean = stats.summary(sim.latency)["mean"]
    err["mean_shift"] = model.ticks_to_unit(stats.summary(approx_result.latency)["mean"] - ref_mean)
    block["error"] = err
    return block, ref_dist


def _approximation_text(model, block) -> str:
    e = block["error"]
    if e["kolmogorov"] == 0 and e["total_variation"] == 0 and e["against"] == "exact" and "mean_shift" not in e:
        return "approximation error: none (periods unchanged)"
    if e["against"] == "exact":
        return (f"approximation error against the exact result of the original periods: Kolmogorov "
                f"{e['kolmogorov']:.4g}, mean shift {e['mean_shift']:+.4g} {model.unit}; original loss "
                f"{_fmt_p(e['loss_original'] or 0.0)}")
    return (f"approximation error against a simulation of the original periods ({e['iterations']:,} frames; "
            f"exact analysis of the original is over --max-time): Kolmogorov {e['kolmogorov']:.4g} "
            f"(the simulation itself is within {e['dkw95']:.3g} of the truth with 95% confidence), mean shift "
            f"{e['mean_shift']:+.4g} {model.unit}")


def _sweep(args, model, deadline, max_time) -> int:
    from jitterscope.errors import JitterscopeError, UsageError
    from jitterscope.ptts import exact, stats

    if args.method != "exact" or args.approximate is not None:
        raise UsageError("--sweep runs the exact analysis; it does not go with --method simulate or --approximate")
    idx, fld, values = _parse_sweep(args.sweep, model)
    comp = model.components[idx]
    label = f"{comp.name}.{fld}"
    variants = [model.with_component(idx, **{fld: v}) for v in values]
    ests = [exact.estimate(v) for v in variants]
    total = sum(e.seconds for e in ests)
    _note(args, f"sweep {label} over {len(values)} values: {sum(e.trees for e in ests):,} latency trees in all; "
                f"predicted work {sum(e.predicted_work for e in ests):,} nodes (seed eq. 5.15); predicted time "
                f"{total:.3g} s")
    if total > max_time:
        raise JitterscopeError(f"the sweep would take about {total:.3g} s, over --max-time {args.max_time}; "
                               f"sweep fewer values or raise --max-time")
    points, dists, sums = [], [], []
    t0 = time.perf_counter()
    for v, m in zip(values, variants):
        r = exact.analyse(m)
        s = stats.summary(r.latency)
        pt: dict[str, Any] = {fld: model.ticks_to_unit(v), "hyperperiod": model.ticks_to_unit(r.hyperperiod),
                              "trees": r.trees, "latency": _latency_json(model, r.latency)}
        if deadline is not None:
            pt["deadline_miss"] = stats.miss_probability(r.latency, deadline)
        pt["loss_probability"] = r.loss
        points.append(pt)
        dists.append(r.latency)
        sums.append({k: model.ticks_to_unit(s[k]) for k in ("min", "p50", "mean", "p99", "max")})
    elapsed = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"model": str(args.model), "unit": model.unit, "method": "exact",
                          "sweep": {"component": comp.name, "field": fld, "points": points},
                          **({"deadline": model.ticks_to_unit(deadline)} if deadline is not None else {}),
                          "seconds": elapsed}, indent=1))
    else:
        print(_describe(model))
        if fld == "offset" and any(v >= comp.period or v < 0 for v in values):
            print(f"note: offsets act modulo the period of {comp.name} ({model.fmt(comp.period)})")
        u = model.unit
        head = f"{label + ' (' + u + ')':>18} {'trees':>9} {'mean':>9} {'p50':>9} {'p99':>9} {'max':>9}"
        if deadline is not None:
            head += f" {'P(>' + model.fmt(deadline).replace(' ', '') + ')':>12}"
        head += f" {'loss':>10}"
        print(head)
        for pt, sm in zip(points, sums):
            row = (f"{pt[fld]:>18.6g} {pt['trees']:>9,} {sm['mean']:>9.5g} {sm['p50']:>9.5g} {sm['p99']:>9.5g} "
                   f"{sm['max']:>9.5g}")
            if deadline is not None:
                row += f" {_fmt_p(pt['deadline_miss']):>12}"
            row += f" {_fmt_p(pt['loss_probability'] or 0.0):>10}"
            print(row)
        print(f"analysis took {elapsed:.3g} s")
    if args.plots:
        from jitterscope.ptts import plots

        files = plots.plot_sweep(args.plots, model, label, [model.ticks_to_unit(v) for v in values], dists, sums,
                                 deadline)
        _note(args, "plots: " + ", ".join(str(f) for f in files))
    return 0


def _print_tree(args, model) -> int:
    from jitterscope.ptts import exact

    k = args.tree
    n0 = model.trees()
    if not 0 <= k < n0:
        from jitterscope.errors import UsageError

        raise UsageError(f"--tree {k}: the hyper-period has latency trees 0..{n0 - 1}")
    root = exact.latency_tree(model, k, max_nodes=20000)
    names = [c.name for c in model.components] + ["output"]
    flat = exact.flatten(root)
    if args.json:
        def node(n):
            return {"component": names[n.component], "time": model.ticks_to_unit(n.time),
                    "children": [{"p": p, "node": node(c)} for p, c in n.children]}

        print(json.dumps({"tree": k, "root": node(root),
                          "flattened": [[model.ticks_to_unit(t), p] for t, p in sorted(flat.items())]}, indent=1))
        return 0
    print(f"latency tree {k} of {n0}: triggering of {names[0]} at {model.fmt(root.time)} "
          f"(seed figure 5.4: (component, instant), edge = probability that this triggering consumes the container)")

    def show(n, depth, p):
        lead = "  " * depth + (f"--{p:.4g}--> " if depth else "")
        print(f"{lead}({names[n.component]}, {model.fmt(n.time)})")
        for q, c in n.children:
            show(c, depth + 1, q)

    show(root, 0, 1.0)
    print("flattened (seed figure 5.5: output instant, probability; latency = instant - "
          f"{model.fmt(root.time)}):")
    for t, p in sorted(flat.items()):
        print(f"  {model.fmt(t)}  {p:.6g}   latency {model.fmt(t - root.time)}")
    return 0
