"""One `jitterscope ptts` analysis as data: method choice, time and memory budgets,
period adaptation with its error, sweeps and single latency trees.

`analyse(model, opts, note)` decides what can run (the exact engine's predicted
work, thesis eq. 5.15, against --max-time and memory; --approximate's adapted
periods, thesis section 5.7), runs it and returns a `Report`; `sweep(...)` and
`tree(...)` do the same for a sweep of one offset or period and for one latency
tree.  Each result's `data()` is what `--json` prints; ptts/render.py writes
the text.  `note` receives progress lines (the estimate before a long analysis).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from jitterscope.budget import mem_available
from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.humanize import seconds
from jitterscope.ptts import approx, exact, simulate, stats
from jitterscope.ptts.exact import Distribution, Estimate, Result, TreeNode
from jitterscope.ptts.model import Model
from jitterscope.ptts.results import (
    Approximation,
    ApproximationError,
    LatencyData,
    ReportData,
    SimulationBlock,
    SweepData,
    SweepPoint,
    TreeData,
    TreeNodeData,
)

MAX_BYTES = 8 * 2**30  # states the exact engine may keep in memory
MAX_SWEEP_VALUES = 200
DEFAULT_ITERATIONS = 10_000  # simulated frames
DEFAULT_ERROR_ITERATIONS = 20_000  # frames simulated to measure an approximation's error
Note = Callable[[str], None]
Series = tuple[str, Distribution]  # (legend, distribution) for the figures


@dataclass
class Options:
    method: str = "exact"  # or "simulate"
    deadline: int | None = None  # ticks
    iterations: int | None = None
    seed: int | None = None
    approximate_s: float | None = None  # --approximate's time budget
    max_time_s: float = 60.0
    max_time_text: str = "60s"  # as the user wrote it, for messages
    progress: Callable[[float], None] | None = None  # fraction done of a simulation


def latency_data(model: Model, dist: Distribution, with_pmf: bool = True) -> LatencyData:
    s = stats.summary(dist)
    unit = model.ticks_to_unit
    out: LatencyData = {
        "mean": unit(s["mean"]),
        "min": unit(s["min"]),
        "max": unit(s["max"]),
        "p50": unit(s["p50"]),
        "p90": unit(s["p90"]),
        "p99": unit(s["p99"]),
        "p999": unit(s["p999"]),
    }
    if with_pmf:
        out["pmf"] = [[t, p] for t, p in zip(unit(dist.times).tolist(), dist.probs.tolist())]
    return out


@dataclass
class Report:
    """The result of one analysis (exact, or simulated and compared with exact)."""

    model: Model
    opts: Options
    estimate: Estimate  # of the periods analysed (adapted ones with --approximate)
    latency: Distribution
    loss: float | None
    loss_by: dict[str, float]
    seconds: float
    exact: Result | None = None
    sim: simulate.SimResult | None = None
    adaptation: approx.Adaptation | None = None
    approximation: Approximation | None = None  # the adaptation and its error
    reference: Series | None = None  # the original periods' distribution, for the figures
    miss: float | None = None
    simulation: SimulationBlock | None = None

    def data(self, model_path: str) -> ReportData:
        m = self.model
        analysed = m.with_periods(self.adaptation.periods) if self.adaptation else m
        out: ReportData = {
            "model": model_path,
            "unit": m.unit,
            "method": self.opts.method,
            "hyperperiod": m.ticks_to_unit(analysed.hyperperiod()),
            "trees": self.estimate.trees,
            "predicted_work": self.estimate.predicted_work,
            "latency": latency_data(m, self.latency),
            "loss_probability": self.loss,
            "seconds": self.seconds,
        }
        if self.simulation:
            out["simulation"] = self.simulation
        if self.opts.deadline is not None:
            out["deadline"] = m.ticks_to_unit(self.opts.deadline)
            out["deadline_miss"] = self.miss
        if self.loss_by:
            out["loss_by_component"] = self.loss_by
        if self.approximation is not None:
            out["approximation"] = self.approximation
        return out


def _estimates(model: Model, opts: Options, note: Note) -> tuple[Model, Estimate, approx.Adaptation | None]:
    """The periods to analyse and their estimate, the adaptation if --approximate asked for one."""
    adaptation = None
    analysed = model
    if opts.approximate_s is not None:
        if opts.method != "exact":
            raise UsageError("--approximate goes with the exact method")
        adaptation = approx.adapt_periods(model, opts.approximate_s)
        analysed = model.with_periods(adaptation.periods)
    est = exact.estimate(model)
    note(
        f"hyper-period {model.fmt_long(model.hyperperiod())}, {est.trees:,} latency trees; predicted work "
        f"{est.predicted_work:,} tree nodes (thesis eq. 5.15); exact analysis predicted to take "
        f"{seconds(est.seconds)}"
    )
    if adaptation is not None:
        note(adaptation.describe(model))
        if adaptation.changed:
            est = exact.estimate(analysed)
            note(
                f"adapted: hyper-period {model.fmt_long(analysed.hyperperiod())}, {est.trees:,} latency trees; "
                f"predicted work {est.predicted_work:,} tree nodes (thesis eq. 5.15); predicted time "
                f"{seconds(est.seconds)}"
            )
    return analysed, est, adaptation


def _exact_if_affordable(model: Model, analysed: Model, est: Estimate, opts: Options) -> Result | None:
    """The exact result: required for --method exact (refused in one line over the budgets), a
    bonus for --method simulate when it fits them."""
    limit = min(MAX_BYTES, mem_available() // 2)  # the shared guard's rule: half of what is available
    fits_memory = est.peak_bytes <= limit
    if opts.method == "exact" and not fits_memory:
        raise JitterscopeError(
            f"exact analysis would hold about {est.peak_bytes / 2**30:.3g} GiB of states ({est.trees:,} latency "
            f"trees over a hyper-period of {model.fmt_long(analysed.hyperperiod())}), over the "
            f"{limit / 2**30:.3g} GiB limit; use --approximate to adapt the periods (thesis section 5.7) or "
            f"--method simulate"
        )
    if opts.method != "exact" and not (est.seconds <= opts.max_time_s and fits_memory):
        return None
    if est.seconds > opts.max_time_s:
        raise JitterscopeError(
            f"exact analysis would take about {seconds(est.seconds)} ({est.trees:,} latency trees over a "
            f"hyper-period of {model.fmt_long(analysed.hyperperiod())}, predicted work {est.predicted_work:,} "
            f"nodes by thesis eq. 5.15), over --max-time {opts.max_time_text}; use --approximate to adapt the "
            f"periods (thesis section 5.7) or --method simulate, or raise --max-time"
        )
    return exact.analyse(analysed)


def analyse(model: Model, opts: Options, note: Note) -> Report:
    """Run the analysis `opts` asks for, within its budgets."""
    analysed, est, adaptation = _estimates(model, opts, note)
    exact_result = _exact_if_affordable(model, analysed, est, opts)
    if opts.method == "simulate":
        n = opts.iterations or DEFAULT_ITERATIONS
        sim = simulate.simulate(model, n, opts.seed, opts.progress, opts.max_time_s, opts.max_time_text)
        block: SimulationBlock = {
            "iterations": n,
            "seconds": sim.seconds,
            "seed": opts.seed,
            "loss_any_overwrite": sim.loss_any,
            "dkw95": stats.dkw_band(n),
        }
        if exact_result is not None:
            d = stats.distances(sim.latency, exact_result.latency)
            block["kolmogorov"], block["total_variation"] = d["kolmogorov"], d["total_variation"]
            block["exact_seconds"] = exact_result.seconds
            block["exact_loss_probability"] = exact_result.loss
            block["exact_latency"] = latency_data(model, exact_result.latency, with_pmf=False)
        else:
            block["note"] = "exact analysis over --max-time; no distance computed"
        rep = Report(
            model, opts, est, sim.latency, sim.loss, {}, sim.seconds, exact=exact_result, sim=sim, simulation=block
        )
    else:
        assert exact_result is not None
        rep = Report(
            model,
            opts,
            est,
            exact_result.latency,
            exact_result.loss,
            exact_result.loss_by_component,
            exact_result.seconds,
            exact=exact_result,
        )
    rep.adaptation = adaptation
    if opts.deadline is not None:
        rep.miss = stats.miss_probability(rep.latency, opts.deadline)
    if adaptation is not None:
        assert exact_result is not None
        rep.approximation, rep.reference = approximation_error(model, adaptation, exact_result, opts)
    return rep


def approximation_error(
    model: Model, ad: approx.Adaptation, approx_result: Result, opts: Options
) -> tuple[Approximation, Series | None]:
    """Compare the adapted model's exact result with the original: exactly if affordable, else by simulation."""
    block: Approximation = {
        "grid": model.ticks_to_unit(ad.grid),
        "periods": [
            {
                "component": c.name,
                "from": model.ticks_to_unit(o),
                "to": model.ticks_to_unit(n),
                "change": model.ticks_to_unit(n - o),
                "relative": (n - o) / o,
            }
            for c, o, n in zip(model.components, ad.original, ad.periods)
        ],
        "phase_steps": [
            {"components": [a.name, b.name], "from": model.ticks_to_unit(s0), "to": model.ticks_to_unit(s1)}
            for a, b, s0, s1 in zip(
                model.components, model.components[1:], approx.phase_steps(ad.original), approx.phase_steps(ad.periods)
            )
        ],
        "hyperperiod_from": model.ticks_to_unit(model.hyperperiod()),
        "trees_from": ad.original_estimate.trees,
        "predicted_seconds_from": ad.original_estimate.seconds,
    }
    if not ad.changed:
        block["error"] = {"against": "exact", "kolmogorov": 0.0, "total_variation": 0.0}
        return block, None
    if ad.original_estimate.seconds <= opts.max_time_s:
        ref = exact.analyse(model)
        d = stats.distances(approx_result.latency, ref.latency)
        err: ApproximationError = {
            "against": "exact",
            "kolmogorov": d["kolmogorov"],
            "total_variation": d["total_variation"],
            "loss_original": ref.loss,
        }
        ref_dist: Series = ("original periods, exact", ref.latency)
        ref_mean = stats.summary(ref.latency)["mean"]
    else:
        n = opts.iterations or DEFAULT_ERROR_ITERATIONS
        sim = simulate.simulate(model, n, opts.seed, opts.progress, opts.max_time_s, opts.max_time_text)
        d = stats.distances(approx_result.latency, sim.latency)
        err = {
            "against": "simulation",
            "iterations": n,
            "kolmogorov": d["kolmogorov"],
            "total_variation": d["total_variation"],
            "dkw95": stats.dkw_band(n),
            "loss_original_simulated": sim.loss,
        }
        ref_dist = (f"original periods, simulation ({n} frames)", sim.latency)
        ref_mean = stats.summary(sim.latency)["mean"]
    err["mean_shift"] = model.ticks_to_unit(stats.summary(approx_result.latency)["mean"] - ref_mean)
    block["error"] = err
    return block, ref_dist


# --- sweeps ------------------------------------------------------------------------------------------------


@dataclass
class Sweep:
    model: Model
    index: int  # the component swept
    field: str  # "offset" or "period"
    values: list[int]  # ticks
    points: list[SweepPoint]
    dists: list[Distribution]
    sums: list[dict[str, float]]  # min, p50, mean, p99, max in the model's unit
    deadline: int | None
    seconds: float

    @property
    def label(self) -> str:
        return f"{self.model.components[self.index].name}.{self.field}"

    def data(self, model_path: str) -> SweepData:
        m = self.model
        out: SweepData = {
            "model": model_path,
            "unit": m.unit,
            "method": "exact",
            "sweep": {"component": m.components[self.index].name, "field": self.field, "points": self.points},
            "seconds": self.seconds,
        }
        if self.deadline is not None:
            out["deadline"] = m.ticks_to_unit(self.deadline)
        return out


def parse_sweep(text: str, model: Model) -> tuple[int, str, list[int]]:
    """`C.offset=LO..HI:STEP` (or `C.period=A,B,C`) as (component index, field, values in ticks)."""
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
        if (hi - lo) // step + 1 > MAX_SWEEP_VALUES:  # counted before the list is built: one line, not OOM
            raise UsageError(f"{where}: {(hi - lo) // step + 1:,} values; at most {MAX_SWEEP_VALUES}")
        values = list(range(lo, hi + 1, step))
    else:
        values = [model.parse_time(v, where) for v in spec.split(",")]
    if len(values) > MAX_SWEEP_VALUES:
        raise UsageError(f"{where}: {len(values)} values; at most {MAX_SWEEP_VALUES}")
    if fld == "period" and any(v <= 0 for v in values):
        raise UsageError(f"{where}: periods must be positive")
    return idx, fld, values


def sweep(model: Model, text: str, opts: Options, note: Note) -> Sweep:
    """The exact analysis at every value of one component's offset or period."""
    if opts.method != "exact" or opts.approximate_s is not None:
        raise UsageError("--sweep runs the exact analysis; it does not go with --method simulate or --approximate")
    idx, fld, values = parse_sweep(text, model)
    label = f"{model.components[idx].name}.{fld}"
    variants = [model.with_component(idx, **{fld: v}) for v in values]
    ests = [exact.estimate(v) for v in variants]
    total = sum(e.seconds for e in ests)
    note(
        f"sweep {label} over {len(values)} values: {sum(e.trees for e in ests):,} latency trees in all; "
        f"predicted work {sum(e.predicted_work for e in ests):,} nodes (thesis eq. 5.15); predicted time "
        f"{seconds(total)}"
    )
    if total > opts.max_time_s:
        raise JitterscopeError(
            f"the sweep would take about {seconds(total)}, over --max-time {opts.max_time_text}; "
            f"sweep fewer values or raise --max-time"
        )
    points: list[SweepPoint] = []
    dists, sums = [], []
    t0 = time.perf_counter()
    for v, m in zip(values, variants):
        r = exact.analyse(m)
        s = stats.summary(r.latency)
        pt: SweepPoint = {
            "hyperperiod": model.ticks_to_unit(r.hyperperiod),
            "trees": r.trees,
            "latency": latency_data(model, r.latency),
            "loss_probability": r.loss,
        }
        if fld == "offset":
            pt["offset"] = model.ticks_to_unit(v)
        else:
            pt["period"] = model.ticks_to_unit(v)
        if opts.deadline is not None:
            pt["deadline_miss"] = stats.miss_probability(r.latency, opts.deadline)
        points.append(pt)
        dists.append(r.latency)
        sums.append({k: model.ticks_to_unit(s[k]) for k in ("min", "p50", "mean", "p99", "max")})
    return Sweep(model, idx, fld, values, points, dists, sums, opts.deadline, time.perf_counter() - t0)


# --- one latency tree --------------------------------------------------------------------------------------


@dataclass
class Tree:
    model: Model
    k: int
    count: int  # latency trees in the hyper-period
    root: TreeNode
    flat: dict[int, float]  # output instant (ticks) -> probability

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.model.components] + ["output"]

    def data(self) -> TreeData:
        m, names = self.model, self.names

        def node(n: TreeNode) -> TreeNodeData:
            return {
                "component": names[n.component],
                "time": m.ticks_to_unit(n.time),
                "children": [{"p": p, "node": node(c)} for p, c in n.children],
            }

        return {
            "tree": self.k,
            "root": node(self.root),
            "flattened": [[m.ticks_to_unit(t), p] for t, p in sorted(self.flat.items())],
        }


def tree(model: Model, k: int) -> Tree:
    """The latency tree of the k-th triggering of the first component (thesis figures 5.4, 5.5)."""
    n0 = model.trees()
    if not 0 <= k < n0:
        raise UsageError(f"--tree {k}: the hyper-period has latency trees 0..{n0 - 1}")
    root = exact.latency_tree(model, k, max_nodes=20000)
    return Tree(model, k, n0, root, exact.flatten(root))
