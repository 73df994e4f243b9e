"""What each `jitterscope pipeline` subcommand does, given its parsed options (commands/pipeline.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jitterscope import options, sysinfo
from jitterscope.errors import UsageError
from jitterscope.outpath import check_dir, check_file, make_dir
from jitterscope.pipeline import render
from jitterscope.pipeline.compiler import Options, Schedule, compile_graph
from jitterscope.pipeline.graph import Graph, graph_from_dict, load_graph
from jitterscope.pipeline.plan import RunOptions
from jitterscope.pipeline.results import BenchRow, read_summary
from jitterscope.pipeline.stats import fmt_us
from jitterscope.rundir import new_run_path
from jitterscope.units import parse_cpulist, parse_duration_ns


def compile_options(args: argparse.Namespace, cpus: list[int] | None = None) -> Options:
    threads = args.threads if args.threads is not None else len(cpus or sysinfo.online_cpus())
    return Options(
        threads=threads,
        heuristic=args.heuristic,
        memory=args.memory,
        split=args.split,
        cache_slack=args.cache_slack,
        max_states=args.max_states,
        max_time_s=parse_duration_ns(args.max_time, what="--max-time") / 1e9,
    )


def _graph(args: argparse.Namespace, path: str, cpus: list[int] | None = None) -> Graph:
    """The graph, with box weights measured here when --weights measured."""
    g = load_graph(path)
    if getattr(args, "weights", "graph") == "measured":
        from jitterscope.pipeline.weights import measure_weights, with_weights

        g = with_weights(g, measure_weights(g, (cpus or sysinfo.online_cpus())[-1]))
    return g


def _cpus(args: argparse.Namespace) -> list[int]:
    return parse_cpulist(args.cpus) if args.cpus is not None else sysinfo.online_cpus()


def do_compile(args: argparse.Namespace) -> int:
    from jitterscope.pipeline import schedule as SF

    if args.output:
        check_file(args.output, "-o")
    if args.gantt:
        check_file(args.gantt, "--gantt")
    g = _graph(args, args.graph)
    sched = compile_graph(g, compile_options(args))
    if args.output:
        SF.write(sched, Path(args.output))
    if args.gantt:  # only where asked: --explain alone once wrote an SVG into the current directory
        _gantt(sched, Path(args.gantt))
    if args.json:
        options.print_json(SF.to_dict(sched))
    elif args.explain:
        print(render.explain(sched))
        print(f"Gantt chart: {args.gantt}" if args.gantt else "Gantt chart: add --gantt FILE.svg to draw it")
    elif args.output:
        print(render.compile_headline(sched))
        print(f"schedule written to {args.output}")
    else:
        sys.stdout.write(SF.dumps(sched))
    return 0


def _gantt(sched: Schedule, path: Path) -> None:
    from jitterscope import plotting
    from jitterscope.pipeline.plots import schedule_gantt

    check_file(path, "--gantt")
    plotting.save(schedule_gantt(sched), path)


def run_options(args: argparse.Namespace, cpus: list[int]) -> RunOptions:
    period = parse_duration_ns(args.period, what="--period") if args.period else 0
    return RunOptions(
        iterations=args.iterations,
        cpus=tuple(cpus),
        seed=args.seed,
        wait=args.wait,
        priority=options.priority(args),
        mlock=not args.no_mlock,
        hugepages=args.hugepages,
        guard=args.guard,
        timers=True,
        period_ns=int(period),
        hang_s=parse_duration_ns(args.hang_timeout, what="--hang-timeout") / 1e9,
    )


def _schedule(args: argparse.Namespace, g: Graph, cpus: list[int]) -> Schedule:
    if args.schedule:
        from jitterscope.pipeline import schedule as SF

        return SF.load(args.schedule, g)
    if args.weights == "measured":
        from jitterscope.pipeline.weights import measure_weights, with_weights

        g = with_weights(g, measure_weights(g, cpus[-1]))
    return compile_graph(g, compile_options(args, cpus))


def do_run(args: argparse.Namespace) -> int:
    from jitterscope.pipeline.run import run_pipeline, timers_wanted
    from jitterscope.rundir import load_run

    cpus = _cpus(args)
    out = Path(args.out) if args.out else None
    if out is not None:
        check_dir(out, "--out")
    g = load_graph(args.graph)
    sched = _schedule(args, g, cpus)
    ro = run_options(args, cpus)
    ro.timers = timers_wanted(sched, ro, args.timers)
    if out is None:
        out = new_run_path("pipeline", g.name, sched.options.heuristic)
    d = run_pipeline(
        sched,
        ro,
        out,
        trace=args.trace,
        buffer_kb=options.buffer_kb(args),
        progress=not args.json,
        late_percentile=args.late,
    )
    run = load_run(d, kinds=("pipeline",))
    if not args.no_report:
        from jitterscope.report.pages import write_report

        write_report(d)
    if args.json:
        options.print_json(run.summary)
    else:
        print(render.run_text(read_summary(run), run.meta, str(d)))
    return 1 if run.summary["guard"]["violations"] else 0


def synthetic_graphs(args: argparse.Namespace) -> list[Graph]:
    from jitterscope.pipeline.synthetic import generate

    w, h = _size(args.size)
    return [
        graph_from_dict(generate(args.seed + i, args.boxes, w, h), f"synthetic seed {args.seed + i}")
        for i in range(args.synthetic)
    ]


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--size must be WIDTHxHEIGHT, e.g. 512x512, got {text!r}") from None
    if not (1 <= w <= 16384 and 1 <= h <= 16384):
        raise UsageError(f"--size must be from 1x1 to 16384x16384, got {text!r}")
    return w, h


def do_bench(args: argparse.Namespace) -> int:
    from jitterscope.pipeline import bench as B

    if (args.graph is None) == (args.synthetic is None):
        raise UsageError("give a GRAPH or --synthetic K (not both)")
    cpus = _cpus(args)
    graphs = [load_graph(args.graph)] if args.graph else synthetic_graphs(args)
    configs = B.configurations(_list(args.heuristics, "--heuristics"), _list(args.memories, "--memories"))
    out = check_dir(args.out, "--out") if args.out else new_run_path("pipeline", "bench", graphs[0].name)
    ro = RunOptions(iterations=args.iterations, cpus=tuple(cpus), seed=1, wait=args.wait, timers=False)
    opts = compile_options(args, cpus)
    make_dir(out, "--out")

    def progress(row: BenchRow) -> None:
        s = row["latency"]
        print(
            f"  {row['graph']:16} {row['heuristic']:12} {row['memory']:7} mean {fmt_us(s['mean']):>10} us  "
            f"σ {fmt_us(s['sd']):>9} us",  # `-` when no iteration finished
            file=sys.stderr if args.json else sys.stdout,
            flush=True,
        )

    result = B.bench(
        graphs, configs, opts, ro, out, progress=False, on_row=progress, trace=args.trace, rounds=args.rounds
    )
    figs = B.figures(result, out)
    if args.json:
        options.print_json(
            {k: v for k, v in result.items() if k not in ("rows", "chains")}
            | {"rows": [{k: v for k, v in r.items() if k != "_lat"} for r in result["rows"]]}
        )
        return 0
    print(
        render.bench_table(
            result["rows"],
            f"\n{result['graph']}: {result['threads']} threads, {result['iterations']:,} iterations per configuration",
        )
    )
    order = result["order_of_sigma"]
    if order["checks"]:
        print("thesis ordering of σ: " + ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in order["checks"].items()))
    if not result["outputs_identical"]:
        print("warning: configurations produced different outputs (a bug: please report)")
    print(f"runs, bench.json and figures ({', '.join(p.name for p in figs)}) in {out}")
    return 0


def _list(text: str | None, what: str) -> list[str] | None:
    if text is None:
        return None
    from jitterscope.pipeline.heuristics import HEURISTICS
    from jitterscope.pipeline.memory import ALLOCATORS

    allowed = HEURISTICS if what == "--heuristics" else ALLOCATORS
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise UsageError(f"{what} takes a comma-separated list of {', '.join(allowed)}, got {text!r}")
    return items


def do_etp(args: argparse.Namespace) -> int:
    from jitterscope.pipeline.etp import profile, write_csv

    check_file(args.output, "-o")
    info = write_csv(profile(args.run, args.resolution), Path(args.output))
    if args.json:
        options.print_json(info)
        return 0
    print(
        f"wrote {info['file']}: {info['iterations']:,} iterations binned up to {info['resolution']}: "
        f"{info['values']} values from {info['min_ns'] / 1e3:,.1f} to {info['max_ns'] / 1e3:,.1f} us "
        f"(mean {info['mean_ns'] / 1e3:,.1f} us)"
    )
    print(
        f"use it in a ptts model whose resolution is {info['resolution']} or divides it, e.g.\n"
        f"  - {{name: pipeline, period: 40ms, offset: 0ms, {info['snippet']}}}"
    )
    return 0


def do_synth(args: argparse.Namespace) -> int:
    import yaml

    from jitterscope.atomic import write_text
    from jitterscope.pipeline.synthetic import generate

    check_file(args.output, "-o")
    w, h = _size(args.size)
    doc = generate(args.seed, args.boxes, w, h)
    g = graph_from_dict(doc, "synthetic")  # what it writes must load
    write_text(
        Path(args.output),
        f"# jitterscope pipeline synth --seed {args.seed} --boxes {args.boxes} "
        f"--size {w}x{h}\n" + yaml.safe_dump(doc, sort_keys=False, width=110),
    )
    print(f"wrote {args.output}: {len(g.boxes)} boxes, {len(g.buffers)} buffers, {w}x{h} {g.pixel}")
    return 0


def do_analyze(args: argparse.Namespace) -> int:
    """`jitterscope analyze` of a pipeline run cut short (called by commands/analyze.py)."""
    from jitterscope.humanize import count
    from jitterscope.pipeline.build import rebuild
    from jitterscope.rundir import load_run

    missing = rebuild(args.run)
    if not args.no_report:
        from jitterscope.report.pages import write_report

        write_report(args.run)
    run = load_run(args.run, kinds=("pipeline",))
    if args.json:
        options.print_json(run.summary)
    else:
        print(render.run_text(read_summary(run), run.meta, str(args.run)))
        kept = f"Recovered a cut-short pipeline run: {count(run.summary['run']['iterations'], 'iteration')} kept"
        print(f"\n{kept}; not recovered: {'; '.join(missing)}." if missing else f"\n{kept}; nothing was lost.")
    return 0
