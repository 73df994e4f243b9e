"""Measure noise on every node of an MPI job at once, or run a real bulk-synchronous benchmark.

Run under MPI: `mpiexec -n N jitterscope cluster measure|bsp ...`, or under
Slurm `srun --mpi=pmi2 -n N ...` (plain `srun` where slurm.conf has
MpiDefault=pmi2; srun without a PMI plugin is refused in one line); one rank per
node, or several per node on distinct CPUs (at most one rank per online CPU of
a host).  Without MPI, install it in a source checkout with `make mpi` (or
`.venv/bin/pip install -e '.[mpi]'`: mpi4py and the MPICH wheel with its mpiexec).

cluster measure: every rank measures one CPU (probe + tracing where allowed),
all starting at a barrier; rank 0 writes one cluster run directory (per-node
Parquet partitions keyed by host and CPU) with a summary: noise per node, the
noisiest nodes, the sources that hit most nodes, and outlier nodes with the
sources that make them differ.

cluster bsp: each rank repeats PHASES times a calibrated amount of work of
length PHASE (a TSC loop that records the noise hitting it) followed by a
barrier or an allreduce; reports the measured slowdown against the noise-free
ideal and against the simulator's predictions from the noise it recorded
(trace-driven and fitted).

CPU choice: local rank r on a host measures online CPU (r+1) mod n (so the
lowest CPU is used last), or the r-th CPU of --cpu-map.  A node is (host, CPU);
$JITTERSCOPE_NODE_NAME ('{rank}' = the rank) renames a rank's host, so one
machine can stand in for several nodes.  Every wait for other ranks has a
deadline (--timeout): a rank that fails or hangs ends the whole job with a
one-line error.

EXAMPLES
  mpiexec -n 64 -ppn 1 jitterscope cluster measure --duration 60s --out runs/room
  mpiexec -n 8 jitterscope cluster measure --cpu-map 1,2,3,4,5,6,7,8 --json
  srun --mpi=pmi2 -N 64 --ntasks-per-node=1 --cpu-bind=none jitterscope cluster measure --duration 60s
  mpiexec -n 16 jitterscope cluster bsp --phase 1ms --phases 2000 --sync allreduce
  jitterscope report runs/room
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from jitterscope import boundedio, options
from jitterscope.errors import JitterscopeError
from jitterscope.units import count_arg, parse_duration_ns, parse_duration_s, seed_arg

if TYPE_CHECKING:  # MPI is imported only once a cluster command runs
    from jitterscope.cluster.mpi import Cluster

S = TypeVar("S")  # a mode's summary.json, as its renderer takes it


def _common(p: argparse.ArgumentParser) -> None:
    options.add_threshold(p)
    p.add_argument(
        "--cpu-map",
        metavar="LIST",
        help="CPU for each rank on a host, by local rank (default: local rank r -> CPU (r+1) mod n)",
    )
    p.add_argument(
        "--out", metavar="DIR", type=options.path_arg, help="cluster run directory rank 0 creates (must not exist)"
    )
    p.add_argument(
        "--timeout",
        default="60s",
        metavar="TIME",
        help="longest wait for other ranks at any synchronization before failing (default 60s)",
    )
    options.add_json(p, "the cluster summary as JSON (rank 0)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND")
    m = sub.add_parser(
        "measure",
        help="every rank measures its CPU; rank 0 writes one cluster run",
        description="Every rank measures its own CPU (barrier-aligned); rank 0 gathers one cluster run.",
    )
    options.add_duration(m)
    options.add_priority(m, help="run each probe SCHED_FIFO at priority N (1-99)")
    options.add_tracing(m)
    _common(m)
    b = sub.add_parser(
        "bsp",
        help="a real bulk-synchronous job: measured slowdown vs ideal vs simulator",
        description="Bulk-synchronous benchmark: calibrated work per phase, then a synchronization.",
    )
    b.add_argument("--phase", default="10ms", metavar="TIME", help="work per phase on every rank (default 10ms)")
    b.add_argument(
        "--phases", default=100, type=count_arg(1, 10**7), metavar="P", help="number of phases (default 100)"
    )
    b.add_argument("--sync", choices=["barrier", "allreduce"], default="barrier", help="end of phase (default barrier)")
    b.add_argument(
        "--replications",
        default=200,
        type=count_arg(1, 10**6),
        metavar="R",
        help="simulator replications for the trace-driven prediction (default 200)",
    )
    b.add_argument("--seed", default=1, type=seed_arg, help="simulator seed (default 1)")
    options.add_priority(
        b, help="run each rank SCHED_FIFO at priority N (only higher-priority work and interrupts then delay it)"
    )
    _common(b)


def run(args: argparse.Namespace) -> int:
    if not getattr(args, "cluster_command", None):
        raise JitterscopeError("choose a subcommand: cluster measure or cluster bsp (see --help)")
    from jitterscope.cluster.mpi import Cluster

    timeout_s = parse_duration_s(args.timeout, what="--timeout")
    if timeout_s <= 0:
        raise JitterscopeError("--timeout must be positive")
    from jitterscope.cluster.measure import parse_cpu_map

    cpu_map = parse_cpu_map(args.cpu_map) if args.cpu_map else None
    threshold_ns = options.threshold_ns(args)
    # every value is checked here, before MPI starts (rank 0 parses them again to broadcast)
    if args.cluster_command == "measure":
        options.duration_ns(args)
    else:
        parse_duration_ns(args.phase, what="--phase")
    cluster = Cluster.start(args.cluster_command, timeout_s)
    if args.cluster_command == "measure":
        return _measure(args, cluster, timeout_s, cpu_map, threshold_ns)
    return _bsp(args, cluster, timeout_s, cpu_map, threshold_ns)


def _measure(
    args: argparse.Namespace, cluster: Cluster, timeout_s: float, cpu_map: list[int] | None, threshold_ns: float
) -> int:
    from jitterscope.cluster.measure import ClusterMeasureOptions, measure_rank
    from jitterscope.cluster.render import render_measure

    out = cluster.every_rank(
        lambda: ClusterMeasureOptions(
            duration_ns=options.duration_ns(args),
            threshold_ns=threshold_ns,
            trace=not args.no_trace,
            priority=options.priority(args),
            buffer_kb=options.buffer_kb(args),
            cpu_map=cpu_map,
            out=args.out,
            timeout_s=timeout_s,
            command_line=list(sys.argv),
        ),
        measure_rank,
    )
    return _show(out, render_measure, args.json)


def _bsp(
    args: argparse.Namespace, cluster: Cluster, timeout_s: float, cpu_map: list[int] | None, threshold_ns: float
) -> int:
    from jitterscope.cluster.bsp import BspOptions, bsp_rank
    from jitterscope.cluster.render import render_bsp

    out = cluster.every_rank(
        lambda: BspOptions(
            phase_ns=parse_duration_ns(args.phase, what="--phase"),
            phases=args.phases,
            sync=args.sync,
            threshold_ns=threshold_ns,
            cpu_map=cpu_map,
            out=args.out,
            timeout_s=timeout_s,
            replications=args.replications,
            seed=args.seed,
            command_line=list(sys.argv),
            priority=options.priority(args),
        ),
        bsp_rank,
    )
    return _show(out, render_bsp, args.json)


def _show(out: Path | None, render: Callable[[S, Path], str], as_json: bool) -> int:
    """Rank 0, which wrote the run directory, prints its summary (`render` takes its mode's summary)."""
    if out is None:
        return 0
    summary = boundedio.read_json(out / "summary.json", "summary")
    if as_json:
        options.print_json(summary)
    else:
        print(render(summary, out))
    return 0
