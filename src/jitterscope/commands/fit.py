"""Fit distributions to a run's per-phase delays and rank them by goodness of fit.

Replays each probed CPU's measured noise as back-to-back phases of --phase work
(work-conserving: noise during the time a phase was extended delays it too) and
takes each phase's delay.  Fits normal, lognormal, gamma, exponential and
Weibull to the delays of phases that met noise (the rest are a zero fraction),
and a generalized-Pareto tail above the 90th percentile, so that maxima over far
more nodes than there are samples are not capped at the largest sample.  Ranks
the families by Anderson-Darling (then Kolmogorov-Smirnov) p-value.  p-values
come from a parametric bootstrap that refits every replicate, so they are valid
although the parameters were estimated from the same data (the textbook KS/AD
p-values are not).  A family "fits" when both p-values are at least 0.05; when
none does, it says so, and `simulate --noise fit:RUN` uses the GPD-tailed
empirical distribution if that fits, else the closest family with a warning.

EXAMPLES
  jitterscope fit runs/quiet --phase 10ms
  jitterscope fit runs/quiet --phase 1ms --json
  jitterscope fit runs/quiet --phase 500us --plots plots/ --replicates 500
"""

from __future__ import annotations

import argparse

from jitterscope import options
from jitterscope.errors import JitterscopeError
from jitterscope.outpath import check_dir
from jitterscope.progress import Progress
from jitterscope.units import count_arg, parse_duration_s, seed_arg


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", type=options.path_text, metavar="RUN", help="run directory")
    p.add_argument(
        "--phase",
        metavar="DURATION",
        help="work per phase, e.g. 10ms (a pipeline run: not needed, "
        "its iterations' delays over the fastest one are fitted)",
    )
    p.add_argument(
        "--replicates",
        type=count_arg(19, 10**6),
        default=200,
        metavar="B",
        help="bootstrap replicates per p-value (default 200)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    options.add_json(p)
    p.add_argument(
        "--plots", type=options.path_text, metavar="DIR", help="write fit_histogram.svg and fit_qq.svg into DIR"
    )


def run(args: argparse.Namespace) -> int:
    if args.plots:  # refused before any work, and no parent directory is created
        check_dir(args.plots, "--plots")
    phase_s = None if args.phase is None else parse_duration_s(args.phase, what="--phase")
    kind = _kind(args.run)
    if kind != "pipeline" and phase_s is None:
        raise JitterscopeError("--phase is required: the work per phase, e.g. 10ms")
    # scipy only once the options and the run are known good: a typo is refused in a fraction of a second
    from jitterscope.simulate import fit_run
    from jitterscope.simulate.render import fit_text

    bar = Progress("fit", 1.0)  # the bootstrap can take minutes: a bar, or a line every few seconds in a log
    try:
        if kind == "pipeline":
            from jitterscope.pipeline.fitting import fit_pipeline

            fit = fit_pipeline(args.run, replicates=args.replicates, seed=args.seed, progress=bar.update)
        else:
            assert phase_s is not None
            fit = fit_run(args.run, phase_s, replicates=args.replicates, seed=args.seed, progress=bar.update)
    finally:
        bar.close()
    data = fit.to_json()
    written = []
    if args.plots:
        from jitterscope import plotting
        from jitterscope.simulate.plots import fit_plots

        with plotting.figure_set():
            written = fit_plots(fit, args.plots)
    if args.json:
        options.print_json(data)
    else:
        print(fit_text(data))
        if written:
            print("plots: " + ", ".join(str(p) for p in written))
    return 0


def _kind(path: str) -> str:
    from jitterscope.rundir import load_run

    return load_run(path, check_tables=False).kind
