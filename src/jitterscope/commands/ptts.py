"""Exact end-to-end latency of a chain of time-triggered components (PTTS, the thesis ch. 5).

Each component of the chain (sensor, processing PC, GPU, display wall...)
triggers on its own timer, reads a one-place buffer (destructive write,
non-destructive read) and takes a random execution time from its profile.
Following every triggering of the first component over one hyper-period
(lcm of the periods) through its latency tree gives the exact distribution of
the end-to-end latency and the probability that a frame is overwritten before
it is read.  The predicted work (thesis eq. 5.15) is printed before starting;
analyses predicted to take longer than --max-time are refused with the
estimate, and --approximate adapts the periods to shorten the hyper-period
(thesis section 5.7) and reports the change and the error it causes.

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
import sys
from collections.abc import Callable, Mapping
from typing import TypeVar

from jitterscope import options
from jitterscope.errors import UsageError
from jitterscope.outpath import check_dir
from jitterscope.units import count_arg, parse_duration_s, seed_arg

DEFAULT_MAX_TIME = "60s"
DEFAULT_APPROX_TIME = "5s"
T = TypeVar("T")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", type=options.path_arg, metavar="MODEL", help="YAML model file (see docs/commands/ptts.md)")
    p.add_argument("--deadline", metavar="T", help="report P(latency > T); a bare number is in the model's unit")
    options.add_json(p, "the result as JSON (notes go to stderr)")
    p.add_argument(
        "--plots", type=options.path_arg, metavar="DIR", help="write PMF and CDF (or sweep) figures, SVG and PNG"
    )
    p.add_argument(
        "--method",
        choices=("exact", "simulate"),
        default="exact",
        help="exact analysis (default) or Monte Carlo simulation compared with it",
    )
    p.add_argument(
        "--iterations",
        type=count_arg(1, 10**9),
        metavar="N",
        help="simulated frames (default 10000; with --approximate, for measuring the error: 20000)",
    )
    p.add_argument("--seed", type=seed_arg, metavar="S", help="random seed of the simulation (default: random)")
    p.add_argument(
        "--approximate",
        nargs="?",
        const=DEFAULT_APPROX_TIME,
        metavar="TIME",
        help=f"adapt periods (thesis 5.7) until the analysis is predicted to take at most TIME "
        f"(default {DEFAULT_APPROX_TIME}); reports the change and the error",
    )
    p.add_argument(
        "--max-time",
        default=DEFAULT_MAX_TIME,
        metavar="TIME",
        help=f"refuse exact analyses predicted to take longer (default {DEFAULT_MAX_TIME})",
    )
    p.add_argument(
        "--sweep",
        metavar="C.offset=LO..HI:STEP",
        help="repeat the analysis for each value of a component's offset (or period); "
        "bare numbers are in the model's unit, e.g. wall.offset=0..80:10",
    )
    p.add_argument(
        "--tree",
        type=int,
        metavar="K",
        help="print the latency tree of the K-th triggering of the first component (thesis figures 5.4, 5.5) and stop",
    )


def _show(as_json: bool, data: Mapping[str, object], text: Callable[[T], str], result: T) -> None:
    if as_json:
        options.print_json(data)
    else:
        print(text(result))


def run(args: argparse.Namespace) -> int:
    from jitterscope.progress import Progress
    from jitterscope.ptts import analysis, render  # numpy and the engine: only when it runs
    from jitterscope.ptts.model import MAX_TICKS, load_model
    from jitterscope.ptts.simulate import CHUNK

    if args.plots:  # refused before any work, and no parent directory is created
        check_dir(args.plots, "--plots")
    model = load_model(args.model)
    deadline = model.parse_time(args.deadline, "--deadline") if args.deadline is not None else None
    if deadline is not None and not 0 < deadline < MAX_TICKS:
        raise UsageError(f"--deadline {args.deadline}: must be positive and below 2^62 ticks of the resolution")
    opts = analysis.Options(
        method=args.method,
        deadline=deadline,
        iterations=args.iterations,
        seed=args.seed,
        approximate_s=None if args.approximate is None else parse_duration_s(args.approximate, what="--approximate"),
        max_time_s=parse_duration_s(args.max_time, what="--max-time"),
        max_time_text=args.max_time,
    )
    bar = Progress("ptts simulate", 1.0, enabled=args.method == "simulate")
    n_sim = args.iterations or analysis.DEFAULT_ITERATIONS
    if args.method == "simulate":
        opts.progress = bar.update
        if n_sim > CHUNK:  # long work says so before it starts
            print(
                f"ptts: simulating {n_sim:,} frames; their time is estimated after the first {CHUNK:,} "
                f"and refused over --max-time {args.max_time}",
                file=sys.stderr,
            )

    def note(text: str) -> None:
        print(text, file=sys.stderr if args.json else sys.stdout, flush=True)

    if args.tree is not None:
        t = analysis.tree(model, args.tree)
        _show(args.json, t.data(), render.tree_text, t)
        return 0
    if args.sweep:
        sw = analysis.sweep(model, args.sweep, opts, note)
        _show(args.json, sw.data(str(args.model)), render.sweep_text, sw)
        if args.plots:
            from jitterscope import plotting
            from jitterscope.ptts import plots  # matplotlib: only with --plots

            with plotting.figure_set():
                files = plots.plot_sweep(
                    args.plots,
                    model,
                    sw.label,
                    [model.ticks_to_unit(v) for v in sw.values],
                    sw.dists,
                    sw.sums,
                    deadline,
                )
            note("plots: " + ", ".join(str(f) for f in files))
        return 0
    if not args.json:
        print(render.describe(model))
    try:
        rep = analysis.analyse(model, opts, note)
    finally:
        bar.close()
    _show(args.json, rep.data(str(args.model)), render.report_text, rep)
    if args.plots:
        from jitterscope import plotting
        from jitterscope.ptts import plots  # matplotlib: only with --plots

        series, title = render.figure_series(rep), f"{model.name}: end-to-end latency"
        with plotting.figure_set():
            files = plots.plot_pmf(args.plots, model, series, title, deadline) + plots.plot_cdf(
                args.plots, model, series, title, deadline
            )
        note("plots: " + ", ".join(str(f) for f in files))
    return 0
