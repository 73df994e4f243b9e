"""Predict what noise costs a bulk-synchronous job on N nodes x P phases.

Every node does --phase of work per phase; noise delays it; a phase ends when
the last node finishes, plus a synchronization of ceil(log2 N) rounds of
--link-latency that noise can hit too (--sync none: phases still wait for the
last node, but the synchronization itself is free).  Prints the mean runtime
over replications with its 95% confidence interval, the runtime without noise
(ideal) and the slowdown (runtime/ideal - 1).

--noise is one of:
  normal(mean=1.91ms,sd=0.36ms)       i.i.d. per-phase delay (Vicente & Matias's fit);
  lognormal(median=..,sigma=..)       also lognormal(mean=..,sd=..), exponential(mean=..),
  gamma(shape=..,scale=..)            weibull(shape=..,scale=..), pareto(alpha=..,scale=..),
  bernoulli(p=..,delay=..)            `delay` in a fraction p of phases, else 0;
  periodic(period=10ms,duration=25us) a detour every period on each node;
  RUN                                 a run directory: each node replays a measured CPU's
                                      noise from a random offset (--cosched: one offset);
  fit:RUN                             the distribution `jitterscope fit RUN` chooses.
I.i.d. delays use order statistics: the maximum over N nodes is drawn directly
(exact at any N, 10^18 included), so any scale takes well under a second.
Run directories are replayed node by node (work-conserving) and are limited by
memory and time; beyond that, use fit:RUN.

--model loggopsim reproduces LogGOPSim (LogGP, SC'10 noise injection) instead:
noise charged once per operation (calcs and the o of messages), barrier rounds of
2o + L, offsets from std::mt19937(--seed + replication) as LogGOPSim draws them.

--by-source (RUN only) removes each attributed source from the timeline in turn
and ranks them by the slowdown that removing them saves at the largest
--nodes and --phases: the order to fix things for a job of that size.

LIST: 1,10,100 or ranges 1..1e6:log10 (one per decade), 1..64:x2 (doubling).

EXAMPLES
  jitterscope simulate --noise 'normal(mean=1.91ms,sd=0.36ms)' --nodes 1..1e6:log10 --phases 1,100,200 --phase 10ms
  jitterscope simulate --noise 'bernoulli(p=0.001,delay=2ms)' --nodes 1..1e9:log10 --phases 1000 --phase 1ms --json
  jitterscope simulate --noise runs/quiet --nodes 1..1e5:log10 --phases 100 --phase 1ms --plots plots/
  jitterscope simulate --noise 'periodic(period=10ms,duration=25us)' --cosched --nodes 1..1e4:log10 \
    --phases 100 --phase 1ms
  jitterscope simulate --noise fit:runs/quiet --nodes 1..1e12:log10 --phases 100 --phase 1ms
  jitterscope simulate --noise runs/quiet --by-source --nodes 10000 --phases 100 --phase 1ms
  jitterscope simulate --model loggopsim --noise 'periodic(period=1ms,duration=25us)' --nodes 8,1024 \
    --phases 100 --phase 1ms --replications 3 --seed 1
"""

from __future__ import annotations

import argparse
import sys

from jitterscope import options
from jitterscope.errors import JitterscopeError
from jitterscope.outpath import check_dir
from jitterscope.progress import Progress
from jitterscope.units import count_arg, parse_count_list, parse_duration_s, seed_arg


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--noise", required=True, metavar="SPEC", help="distribution, periodic(...), run directory or fit:RUN"
    )
    p.add_argument("--nodes", required=True, metavar="LIST", help="node counts, e.g. 1,10,100 or 1..1e6:log10")
    p.add_argument("--phases", required=True, metavar="LIST", help="phase counts, e.g. 1,100,200 or 1..1000:x2")
    p.add_argument("--phase", required=True, metavar="DURATION", help="work per phase per node, e.g. 10ms")
    p.add_argument(
        "--sync",
        choices=("barrier", "allreduce", "none"),
        default="barrier",
        help="synchronization after each phase (default barrier)",
    )
    p.add_argument(
        "--link-latency",
        metavar="DURATION",
        help="latency of one synchronization round (default 2us; LogGP's L, 2.5us, with --model loggopsim)",
    )
    p.add_argument(
        "--model",
        choices=("default", "loggopsim"),
        default="default",
        help="default: work-conserving replay; loggopsim: LogGOPSim's semantics (periodic or RUN noise, barrier)",
    )
    p.add_argument(
        "--overhead", metavar="DURATION", help="LogGP o of a send or receive, --model loggopsim only (default 1.5us)"
    )
    p.add_argument(
        "--cosched",
        action="store_true",
        help="co-scheduled noise: all nodes replay the same timeline at the same offset",
    )
    p.add_argument(
        "--replications",
        type=count_arg(1, 10**7),
        metavar="R",
        help="independent replications (default 100 for distributions, 10 for timelines)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    p.add_argument(
        "--by-source", action="store_true", help="rank the run's sources by the slowdown removing each saves"
    )
    options.add_json(p)
    p.add_argument("--plots", type=options.path_text, metavar="DIR", help="write runtime/slowdown SVG figures into DIR")


def run(args: argparse.Namespace) -> int:
    if args.plots:  # refused before any work, and no parent directory is created
        check_dir(args.plots, "--plots")
    nodes = parse_count_list(args.nodes, "--nodes")
    phases = parse_count_list(args.phases, "--phases")
    if not nodes or not phases:
        raise JitterscopeError("--nodes and --phases need at least one value each")
    phase_s = parse_duration_s(args.phase, what="--phase")
    loggop = args.model == "loggopsim"
    default_latency = "2.5us" if loggop else "2us"
    latency = parse_duration_s(args.link_latency or default_latency, what="--link-latency", allow_zero=True)
    if args.overhead and not loggop:
        raise JitterscopeError("--overhead is LogGP's o: it needs --model loggopsim")
    overhead = parse_duration_s(args.overhead or "1.5us", what="--overhead", allow_zero=True)
    if max(nodes) > 10**18:
        raise JitterscopeError(f"--nodes up to 1e18 are supported, got {max(nodes):.3g}")
    # scipy only once the plain options are known good: a typo is refused in a fraction of a second
    from jitterscope.simulate import Job, by_source, parse_noise, simulate
    from jitterscope.simulate.render import simulate_text
    from jitterscope.simulate.spec import DistributionNoise, FitNoise

    spec = parse_noise(args.noise)
    if loggop and (isinstance(spec, (DistributionNoise, FitNoise)) or args.by_source):
        raise JitterscopeError(
            "--model loggopsim replays a noise trace: give periodic(...) or a run, without --by-source"
        )
    iid = isinstance(spec, (DistributionNoise, FitNoise))
    reps = args.replications if args.replications is not None else (100 if iid else 10)
    if max(phases) * reps > 10**9 and not iid:
        raise JitterscopeError(
            f"{max(phases)} phases x {reps} replications is too many to replay; use fewer or --noise fit:RUN"
        )
    job = Job(tuple(nodes), tuple(phases), phase_s, args.sync, latency, args.cosched, reps, args.seed)
    bar = Progress("simulate", 1.0, enabled=not args.json or None)
    try:
        if loggop:
            from jitterscope.simulate.loggop import simulate_loggopsim

            sim, ranking = simulate_loggopsim(spec, job, overhead), None  # type: ignore[arg-type]
        elif args.by_source:
            sim, ranking = by_source(spec, job, bar.update, lambda text: print(text, file=sys.stderr))
        else:
            sim, ranking = simulate(spec, job, bar.update), None
    finally:
        bar.close()
    data = sim.to_json()
    if ranking is not None:
        data["by_source"] = ranking
    if args.plots:
        from jitterscope import plotting
        from jitterscope.simulate.plots import simulate_plots

        with plotting.figure_set():
            written = simulate_plots(data, args.plots)
        if not args.json:
            sim.notes.append("plots: " + ", ".join(str(p) for p in written))
    if args.json:
        options.print_json(data)
        for note in sim.notes:
            print(f"jitterscope: note: {note}", file=sys.stderr)
    else:
        print(simulate_text(data, sim.notes))
    return 0
