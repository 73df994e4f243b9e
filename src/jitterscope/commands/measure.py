"""Measure OS noise on chosen CPUs and attribute every detour to its kernel cause.

A pinned probe thread per CPU spins reading the TSC and records every gap longer
than the threshold (a "detour": time the CPU was taken away).  Meanwhile a
private tracefs instance records interrupts, softirqs, NMIs, context switches,
workqueue items and timer callbacks on those CPUs, and each detour's time is
split among them: every nanosecond counts once, to the innermost context.

By default every online CPU but the lowest is measured; the lowest stays free
for jitterscope's own work (trace readers, writing the run).  Ctrl-C ends the
measurement early and still writes a complete run.  Every run is written to a
run directory (default ./jitterscope-runs/<time>-<host>/) that report, compare,
export, simulate and fit read.

EXAMPLES
  jitterscope measure                          # 10 s on every CPU but CPU 0
  jitterscope measure --cpus 1-3 --duration 60s --threshold 2us
  jitterscope measure --cpus 2 --priority fifo:50 --out runs/tuned
  jitterscope measure --no-trace --json        # detours only, summary as JSON
"""

from __future__ import annotations

import argparse

from jitterscope import options, sysinfo


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_cpus(p)
    options.add_duration(p)
    options.add_threshold(p)
    options.add_priority(p)
    options.add_tracing(p)
    p.add_argument("--out", metavar="DIR", type=options.path_arg, help="run directory to create (must not exist)")
    p.add_argument("--no-report", action="store_true", help="do not write report.html into the run")
    options.add_json(p, "summary.json")


def run(args: argparse.Namespace) -> int:
    from jitterscope.measure.lifecycle import MeasureOptions, run_measurement, validate
    from jitterscope.measure.render import render_summary
    from jitterscope.rundir import load_run, new_run_path

    cpus = options.cpus(args)
    opts = MeasureOptions(
        cpus=cpus,
        duration_ns=options.duration_ns(args),
        threshold_ns=options.threshold_ns(args),
        priority=options.priority(args),
        trace=not args.no_trace,
        buffer_kb=options.buffer_kb(args),
        report=not args.no_report,
        progress=not args.json,
    )
    out_dir = args.out or new_run_path()
    validate(opts, out_dir)
    if not args.cpus and not args.json:
        opts.note = (
            f"measuring CPU {','.join(map(str, cpus))} (CPU {sysinfo.online_cpus()[0]} stays free for "
            f"jitterscope itself; choose with --cpus)"
        )
    run_dir = run_measurement(opts, out_dir)
    run = load_run(run_dir, check_tables=False)
    if args.json:
        options.print_json(run.summary)
    else:
        print(render_summary(run.summary, str(run_dir), run.meta))
        if (run_dir / "report.html").exists():
            print(f"Report: {run_dir / 'report.html'}")
        if not run.tracing:
            print(f"Attribution off: {run.meta['tracing'].get('reason')}")
    return 0
