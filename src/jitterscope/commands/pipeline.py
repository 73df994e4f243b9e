"""Compile a streaming pipeline into a static schedule and run it on pinned threads (the thesis ch. 3).

A pipeline is a graph of boxes (source, gain, add, average, copy, dup,
convolution, sink, or your own C kernel) on images, written in a page of YAML
(docs/commands/pipeline.md).  `compile` splits boxes into row sub-boxes, derives
their dependencies from the regions they read, schedules them onto threads
with one of five heuristics (simple, barrier, fixed, predictable, reduced),
allocates buffers simply or reusing memory through an interference graph, and
adds counting signals; the schedule file it writes is checked for deadlock and
races before it runs.  `run` executes it natively on pinned threads and writes a
run directory (per-iteration latency, per-sub-box times; `--trace` explains
late iterations by kernel source) that report, compare and fit read.  `bench`
runs every heuristic x allocator in the thesis's table layout; `etp` turns a
run's latency distribution into an execution-time profile for `ptts`.

EXAMPLES
  jitterscope pipeline compile examples/pipeline/appendix.yaml --threads 2 --heuristic fixed --memory simple
  jitterscope pipeline compile examples/pipeline/appendix.yaml --heuristic reduced --explain
  jitterscope pipeline compile g.yaml --threads 2 -o g.schedule.yaml
  jitterscope pipeline run examples/pipeline/appendix.yaml --heuristic predictable --iterations 10000
  jitterscope pipeline run g.yaml --schedule g.schedule.yaml --cpus 0,1 --trace --out runs/p1
  jitterscope pipeline bench examples/pipeline/appendix.yaml --iterations 2000
  jitterscope pipeline bench --synthetic 10 --boxes 100 --size 64x64 --iterations 500
  jitterscope pipeline etp runs/p1 -o pipeline.csv --resolution 10us
  jitterscope pipeline synth --boxes 100 --seed 7 -o synthetic.yaml
"""

from __future__ import annotations

import argparse

from jitterscope import options
from jitterscope.pipeline import sos
from jitterscope.units import count_arg, percentile_arg, seed_arg


def _compile_args(p: argparse.ArgumentParser, default_heuristic: str = "reduced") -> None:
    p.add_argument(
        "--threads",
        type=count_arg(1, 1024),
        metavar="N",
        help="threads (processors) to schedule for (default: the CPUs used)",
    )
    p.add_argument(
        "--heuristic",
        default=default_heuristic,
        choices=("simple", "barrier", "fixed", "predictable", "reduced"),
        help=f"thread scheduling heuristic (default {default_heuristic})",
    )
    p.add_argument(
        "--memory",
        default="reuse",
        choices=("simple", "reuse"),
        help="buffer allocation: one range per buffer, or reuse by interference graph (default reuse)",
    )
    p.add_argument(
        "--split", type=count_arg(1, 1024), metavar="N", help="sub-boxes per parallel box (default: --threads)"
    )
    p.add_argument(
        "--cache-slack",
        type=float,
        default=0.0,
        metavar="W",
        help="predictable/reduced: run an actor on its producer's thread if that starts it at most W "
        "weight units later (default 0: only on ties)",
    )
    p.add_argument(
        "--max-states",
        type=count_arg(1, 10**9),
        default=sos.DEFAULT_MAX_STATES,
        metavar="N",
        help=f"reduced: stop the search after N states (default {sos.DEFAULT_MAX_STATES:,})",
    )
    p.add_argument(
        "--max-time",
        default="10s",
        metavar="TIME",
        help="reduced: stop the search after TIME (default 10s); the result says whether the minimum was proven",
    )
    p.add_argument(
        "--weights",
        default="graph",
        choices=("graph", "measured"),
        help="box weights for scheduling: the graph's timing (or the cost model; default), or medians "
        "measured here, each box alone on one thread (not deterministic)",
    )


def _run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--iterations",
        type=count_arg(1, 10**9),
        default=1000,
        metavar="N",
        help="iterations to run (default 1000; the thesis ran 100,000)",
    )
    p.add_argument("--cpus", metavar="LIST", help="CPUs for the threads, e.g. 0-1 (default: every online CPU)")
    p.add_argument(
        "--wait",
        default="auto",
        choices=("auto", "spin", "futex", "hybrid"),
        help="how a thread waits for a signal; auto (default): spin on isolated CPUs or with "
        "--priority, hybrid (spin ~50 us, then sleep) when each thread has its own CPU, else futex",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = options.add_action(sub, "compile", "graph -> schedule file (deterministic)", __doc__)
    c.add_argument("graph", type=options.path_text, metavar="GRAPH", help="pipeline graph (YAML)")
    _compile_args(c)
    c.add_argument(
        "-o", "--output", type=options.path_text, metavar="FILE", help="write the schedule here (default: print it)"
    )
    c.add_argument("--explain", action="store_true", help="print the schedule as tables")
    c.add_argument(
        "--gantt",
        type=options.path_text,
        metavar="FILE.svg",
        help="draw the Gantt chart of the simulated schedule into this SVG file",
    )
    options.add_json(c, "the schedule as JSON")

    r = options.add_action(sub, "run", "run a schedule on pinned threads; write a run directory", __doc__)
    r.add_argument("graph", type=options.path_text, metavar="GRAPH", help="pipeline graph (YAML)")
    r.add_argument(
        "--schedule", type=options.path_text, metavar="FILE", help="a schedule from `compile -o` (default: compile now)"
    )
    _compile_args(r)
    _run_args(r)
    r.add_argument("--seed", type=seed_arg, default=1, help="the sources' input data (default 1)")
    options.add_priority(r, help="run the threads SCHED_FIFO at priority N (1-99)")
    r.add_argument("--no-mlock", action="store_true", help="do not lock the process's memory")
    r.add_argument("--hugepages", action="store_true", help="ask for transparent huge pages on the buffer pool")
    r.add_argument(
        "--guard",
        action="store_true",
        help="tag every row with (buffer, iteration) and check what "
        "each sub-box reads: reports any race or overlapping live buffers (slower)",
    )
    r.add_argument(
        "--timers",
        dest="timers",
        action="store_true",
        default=None,
        help="per-sub-box timestamps of every iteration (default: when under 5M records)",
    )
    r.add_argument("--no-timers", dest="timers", action="store_false", help="no per-sub-box timestamps")
    r.add_argument(
        "--period",
        metavar="TIME",
        help="release iteration k at t0 + k*TIME (default: back to back); latency is then measured from the release",
    )
    r.add_argument(
        "--hang-timeout",
        default="10s",
        metavar="TIME",
        help="stop and say where threads wait if no iteration completes for TIME or 20 times the "
        "slowest iteration so far (default 10s)",
    )
    r.add_argument("--trace", action="store_true", help="trace the kernel alongside; attribute late iterations")
    options.add_buffer(r)
    r.add_argument(
        "--late",
        type=percentile_arg(50, 100),
        default=99.0,
        metavar="P",
        help="late iterations: latency at or above the P-th percentile (default 99)",
    )
    r.add_argument(
        "--out",
        type=options.path_text,
        metavar="DIR",
        help="run directory (default jitterscope-runs/<time>-pipeline-...)",
    )
    r.add_argument("--no-report", action="store_true", help="do not write report.html into the run")
    options.add_json(r, "summary.json")

    b = options.add_action(sub, "bench", "every heuristic x allocator, the thesis's table", __doc__)
    b.add_argument(
        "graph", nargs="?", type=options.path_text, metavar="GRAPH", help="pipeline graph (YAML), or use --synthetic"
    )
    b.add_argument("--synthetic", type=count_arg(1, 10000), metavar="K", help="K seeded synthetic chains")
    b.add_argument("--boxes", type=count_arg(4, 10000), default=100, help="boxes per synthetic chain (default 100)")
    b.add_argument("--size", default="256x256", metavar="WxH", help="synthetic image size (default 256x256)")
    b.add_argument("--seed", type=seed_arg, default=1, help="first synthetic chain's seed (default 1)")
    b.add_argument("--heuristics", metavar="LIST", help="comma-separated (default: all five)")
    b.add_argument("--memories", metavar="LIST", help="comma-separated simple,reuse (default both)")
    _compile_args(b)
    _run_args(b)
    b.add_argument("--trace", action="store_true", help="trace each run: say what delayed its late iterations")
    b.add_argument(
        "--rounds",
        type=count_arg(1, 1000),
        default=1,
        metavar="R",
        help="configurations take turns in "
        "R rounds of ITERATIONS/R each: a shared machine's load falls on all alike (default 1)",
    )
    b.add_argument("--out", type=options.path_text, metavar="DIR", help="bench directory (runs, bench.json, figures)")
    options.add_json(b, "the table as JSON")

    e = options.add_action(sub, "etp", "a run's latency distribution as a ptts execution-time profile", __doc__)
    e.add_argument("run", type=options.path_text, metavar="RUN", help="pipeline run directory")
    e.add_argument(
        "-o",
        "--output",
        required=True,
        type=options.path_text,
        metavar="FILE.csv",
        help="the profile (time,probability)",
    )
    e.add_argument(
        "--resolution",
        default="10us",
        metavar="TIME",
        help="round latencies up to whole ticks of TIME (default 10us): the ptts model's resolution",
    )
    options.add_json(e, "what was written")

    s = options.add_action(sub, "synth", "write a seeded synthetic graph", __doc__)
    s.add_argument("--boxes", type=count_arg(4, 10000), default=100, help="boxes (default 100)")
    s.add_argument("--seed", type=seed_arg, default=1, help="seed (default 1)")
    s.add_argument("--size", default="256x256", metavar="WxH", help="image size (default 256x256)")
    s.add_argument(
        "-o", "--output", required=True, type=options.path_text, metavar="FILE.yaml", help="graph file to write"
    )


def run(args: argparse.Namespace) -> int:
    from jitterscope.pipeline import actions

    return int(getattr(actions, f"do_{args.action}")(args))
