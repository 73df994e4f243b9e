"""Node health check for Slurm prolog/epilog, health-check programs and monitoring scripts.

Measures the chosen CPUs briefly (default 2 s, with attribution), then judges the
run against limits (--max-noise, --max-detour, --max-p99, --max-unexplained; any
CPU over a limit fails) and/or against a saved baseline run (--baseline: a
`jitterscope measure` run of this node when it was known good; compare's test
decides whether any source or CPU total got significantly worse, by at least
--min-ppm: 1000 ppm by default, 1 ms per second, since a failed check may drain
a node; `compare` itself flags 20 ppm).  Prints ONE
line, `JITTERSCOPE OK - ...` or `JITTERSCOPE UNHEALTHY - ...`, ending in
Nagios-style performance data after `|`.

Exit code: 0 healthy, 1 unhealthy (a limit broken or a regression against the
baseline), 2 could not check (bad input, unreadable baseline, measurement
failed; the one-line error goes to stderr).

With --baseline, the CPUs, SCHED_FIFO priority and tracing default to the
baseline's, so the check measures the way the baseline was measured.

EXAMPLES
  jitterscope measure --cpus 1-3 --duration 30s --priority fifo:10 --out /var/lib/jitterscope/baseline
  jitterscope check --baseline /var/lib/jitterscope/baseline
  jitterscope check --cpus 1-3 --max-noise 1% --max-detour 500us
  jitterscope check --baseline /var/lib/jitterscope/baseline --max-p99 50us --json
  jitterscope check --cpus 1 --max-noise 0.5% || scontrol update nodename=$(hostname -s) state=drain reason=jitter
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from jitterscope import options, sysinfo
from jitterscope.errors import UsageError
from jitterscope.units import format_cpulist, parse_cpulist, parse_duration_ns, parse_share

if TYPE_CHECKING:
    from jitterscope.check.verdict import Limits


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_cpus(p, help="CPUs to check, e.g. 1-3 (default: the baseline's, else all online but the lowest)")
    options.add_duration(p, default="2s")
    options.add_threshold(p)
    options.add_priority(p, help="run the probe SCHED_FIFO at priority N (default: the baseline's, else normal)")
    options.add_tracing(p)
    p.add_argument("--baseline", metavar="RUN", type=Path, help="a measure run of this node when it was known good")
    p.add_argument(
        "--max-noise", metavar="SHARE", help="unhealthy when a CPU's noise exceeds SHARE, e.g. 1%% or 500ppm"
    )
    p.add_argument(
        "--max-detour", metavar="TIME", help="unhealthy when a CPU's longest detour exceeds TIME, e.g. 500us"
    )
    p.add_argument("--max-p99", metavar="TIME", help="unhealthy when a CPU's 99th-percentile detour exceeds TIME")
    p.add_argument(
        "--max-unexplained",
        metavar="SHARE",
        help="unhealthy when more than SHARE of the noise is unexplained (hypervisor, SMI), e.g. 30%%",
    )
    options.add_regression_thresholds(p, min_ppm=1000.0, why=": 1 ms per second of a CPU")
    p.add_argument("--out", metavar="DIR", type=Path, help="keep the check's run directory here (default: removed)")
    options.add_json(p, "the verdict")


def _limits(args: argparse.Namespace) -> Limits:  # Limits is imported lazily with the library
    from jitterscope.check.verdict import Limits

    def share(text: str | None, opt: str) -> float | None:
        return None if text is None else parse_share(text, what=opt)

    def time_ns(text: str | None, opt: str) -> float | None:
        return None if text is None else parse_duration_ns(text, what=opt)

    return Limits(
        max_noise=share(args.max_noise, "--max-noise"),
        max_detour_ns=time_ns(args.max_detour, "--max-detour"),
        max_p99_ns=time_ns(args.max_p99, "--max-p99"),
        max_unexplained=share(args.max_unexplained, "--max-unexplained"),
    )


def run(args: argparse.Namespace) -> int:
    limits = _limits(args)
    if not limits.any and args.baseline is None:
        raise UsageError(
            "nothing to check against: give --baseline RUN and/or a limit (--max-noise, --max-detour, ...)"
        )
    thresholds = options.regression_thresholds(args)
    duration_ns = options.duration_ns(args)
    threshold_ns = options.threshold_ns(args)
    priority = options.priority(args)
    buffer_kb = options.buffer_kb(args)
    if args.baseline is None:
        sysinfo.check_cpus(options.cpus(args))  # before the imports below: a wrong CPU is refused at once
    if args.out is not None and args.out.exists():
        raise UsageError(f"{args.out}: already exists; choose a new --out directory")
    # scipy and pyarrow only once the options are known good
    from jitterscope.check.render import render_line
    from jitterscope.check.run import CheckOptions, check
    from jitterscope.compare import Thresholds
    from jitterscope.compare.comparable import priority as run_priority
    from jitterscope.rundir import load_run

    baseline = None
    trace = not args.no_trace
    if args.baseline is not None:
        baseline = load_run(args.baseline, kinds=("measure",), purpose="check --baseline")
        cpus = parse_cpulist(args.cpus) if args.cpus is not None else list(baseline.cpus)
        outside = sorted(set(cpus) - set(baseline.cpus))
        if outside:
            raise UsageError(
                f"--cpus {format_cpulist(cpus)}: the baseline {args.baseline} has no CPU {format_cpulist(outside)} "
                f"(it measured CPU {format_cpulist(baseline.cpus)})"
            )
        if priority is None and run_priority(baseline) is not None:
            priority = options.parse_priority(run_priority(baseline))
        trace = trace and baseline.tracing
    else:
        cpus = options.cpus(args)
    sysinfo.check_cpus(cpus)
    verdict = check(
        CheckOptions(
            cpus=cpus,
            duration_ns=duration_ns,
            threshold_ns=threshold_ns,
            limits=limits,
            priority=priority,
            trace=trace,
            buffer_kb=buffer_kb,
            baseline=baseline,
            thresholds=Thresholds(*thresholds),
            out=args.out,
        )
    )
    if args.json:
        options.print_json({"status": verdict.status, **dataclasses.asdict(verdict)})
    else:
        print(render_line(verdict))
    return 0 if verdict.healthy else 1
