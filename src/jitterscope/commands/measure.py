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
import json
import re
import sys
from pathlib import Path

from jitterscope import sysinfo
from jitterscope.errors import JitterscopeError
from jitterscope.units import parse_cpulist, parse_duration_ns, parse_size


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cpus", metavar="LIST", help="CPUs to probe, e.g. 1 or 1-3,5 (default: all online but the lowest)")
    p.add_argument("--duration", default="10s", metavar="TIME", help="how long to measure (default 10s)")
    p.add_argument("--threshold", default="1us", metavar="TIME", help="smallest gap counted as a detour (default 1us)")
    p.add_argument("--priority", metavar="fifo:N", help="run the probe SCHED_FIFO at priority N (1-99)")
    p.add_argument("--no-trace", action="store_true", help="measure only; no kernel tracing or attribution")
    p.add_argument("--buffer", default="4M", metavar="SIZE",
                   help="trace ring buffer per CPU (default 4M); raise it if events are lost")
    p.add_argument("--out", metavar="DIR", type=Path, help="run directory to create (must not exist)")
    p.add_argument("--no-report", action="store_true", help="do not write report.html into the run")
    p.add_argument("--json", action="store_true", help="print summary.json to stdout and nothing else there")


def _priority(text: str | None) -> int | None:
    if text is None:
        return None
    m = re.fullmatch(r"(?:fifo:)?(\d+)", text.strip())
    if not m:
        raise JitterscopeError(f"malformed --priority {text!r}: use fifo:N with N in 1-99")
    return int(m.group(1))


def run(args: argparse.Namespace) -> int:
    from jitterscope.measure.lifecycle import MeasureOptions, default_run_dir, run_measurement, validate
    from jitterscope.measure.render import render_summary
    from jitterscope.rundir import load_run

    cpus = parse_cpulist(args.cpus) if args.cpus is not None else sysinfo.default_cpus()
    opts = MeasureOptions(
        cpus=cpus,
        duration_ns=parse_duration_ns(args.duration, what="--duration"),
        threshold_ns=parse_duration_ns(args.threshold, what="--threshold"),
        priority=_priority(args.priority),
        trace=not args.no_trace,
        buffer_kb=max(1, parse_size(args.buffer, what="--buffer") // 1024),
        report=not args.no_report,
        progress=not args.json,
    )
    out_dir = args.out or default_run_dir()
    validate(opts, out_dir)
    if not args.cpus and not args.json:
        opts.note = (f"measuring CPU {','.join(map(str, cpus))} (CPU {sysinfo.online_cpus()[0]} stays free for "
                     f"jitterscope itself; choose with --cpus)")
    run_dir = run_measurement(opts, out_dir)
    run = load_run(run_dir, check_tables=False)
    if args.json:
        print(json.dumps(run.summary, indent=2))
    else:
        print(render_summary(run.summary, str(run_dir), run.meta))
        if (run_dir / "report.html").exists():
            print(f"Report: {run_dir / 'report.html'}")
        if not run.tracing:
            print(f"Attribution off: {run.meta['tracing'].get('reason')}")
    return 0
