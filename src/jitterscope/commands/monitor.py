"""Measure continuously at a low duty cycle and serve Prometheus metrics on localhost.

Every INTERVAL, measure for WINDOW on the chosen CPUs (with attribution), keep
the window as a run directory in a rolling history (bounded in count and size),
update the metrics at http://127.0.0.1:PORT/metrics, and log a line when a
source appears or regresses against the baseline (the first --baseline-windows
windows), with the same test and thresholds as `compare`.  A failed window is
logged and skipped.  SIGTERM or Ctrl-C stops it cleanly (exit code 0).

Metrics: jitterscope_windows_total, jitterscope_window_failures_total,
jitterscope_noise_ppm{cpu}, jitterscope_detours{cpu}, jitterscope_max_detour_ns{cpu},
jitterscope_source_noise_ns{kind,name}, jitterscope_source_detours{kind,name},
jitterscope_lost_events, jitterscope_lost_events_total,
jitterscope_unexplained_share, jitterscope_regressed_sources, ...

EXAMPLES
  jitterscope monitor --cpus 1-3 --interval 5min --window 10s
  jitterscope monitor --interval 60s --window 5s --history /var/lib/jitterscope --port 9469
  curl -s localhost:9469/metrics | grep noise_ppm
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jitterscope import options, sysinfo
from jitterscope.errors import JitterscopeError
from jitterscope.units import count_arg, parse_duration_s, parse_size


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_cpus(p)
    p.add_argument("--interval", default="60s", metavar="TIME", help="time between window starts (default 60s)")
    p.add_argument("--window", default="5s", metavar="TIME", help="measurement window (default 5s)")
    options.add_threshold(p)
    options.add_priority(p)
    options.add_no_trace(p, help="measure only; no attribution (no source metrics)")
    p.add_argument(
        "--history",
        type=options.path_arg,
        default=Path("jitterscope-monitor"),
        metavar="DIR",
        help="directory of the rolling history (default ./jitterscope-monitor)",
    )
    p.add_argument(
        "--keep", type=count_arg(1, 10**6), default=100, metavar="N", help="keep at most N windows (default 100)"
    )
    p.add_argument("--max-size", default="512M", metavar="SIZE", help="keep at most SIZE of history (default 512M)")
    p.add_argument(
        "--port", type=count_arg(0, 65535), default=9469, help="metrics port on 127.0.0.1 (default 9469; 0 = any free)"
    )
    p.add_argument(
        "--baseline-windows",
        type=count_arg(1, 10**4),
        default=3,
        metavar="N",
        help="pool the first N good windows as the baseline (default 3)",
    )
    p.add_argument(
        "--windows", type=count_arg(1, 10**9), metavar="N", help="stop after N windows (default: run until stopped)"
    )


def run(args: argparse.Namespace) -> int:
    cpus = options.cpus(args)
    sysinfo.check_cpus(cpus)
    interval = parse_duration_s(args.interval, what="--interval")
    window = parse_duration_s(args.window, what="--window")
    if window > interval:
        raise JitterscopeError(f"--window {args.window} is longer than --interval {args.interval}")
    if not 0 <= args.port <= 65535:
        raise JitterscopeError(f"--port {args.port} out of range 0-65535")
    if args.keep < 1 or args.baseline_windows < 1 or (args.windows is not None and args.windows < 1):
        raise JitterscopeError("--keep, --baseline-windows and --windows must be at least 1")
    # scipy and pyarrow only once the options are known good: a typo is refused in a fraction of a second
    from jitterscope.monitor import Monitor, MonitorOptions

    opts = MonitorOptions(
        cpus=cpus,
        interval_s=interval,
        window_s=window,
        history=args.history,
        port=args.port,
        threshold_ns=options.threshold_ns(args),
        trace=not args.no_trace,
        priority=options.priority(args),
        max_windows=args.keep,
        max_bytes=parse_size(args.max_size, what="--max-size"),
        baseline_windows=args.baseline_windows,
        stop_after=args.windows,
    )
    return Monitor(opts).run()
