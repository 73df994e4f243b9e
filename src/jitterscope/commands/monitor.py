"""Measure continuously at a low duty cycle and serve Prometheus metrics on localhost.

Every INTERVAL, measure for WINDOW on the chosen CPUs (with attribution), keep
the window as a run directory in a rolling history (bounded in count and size),
update the metrics at http://127.0.0.1:PORT/metrics, and log a line when a
source appears or regresses against the baseline (the first --baseline-windows
windows), with the same test and thresholds as `compare`.  A failed window is
logged and skipped.  SIGTERM or Ctrl-C stops it cleanly (exit code 0).

--print-unit prints a hardened systemd unit that runs this jitterscope with the
options given (history in /var/lib/jitterscope/monitor unless --history names
another directory) and exits; docs/commands/monitor.md shows installing it.

Metrics: jitterscope_windows_total, jitterscope_window_failures_total,
jitterscope_noise_ppm{cpu}, jitterscope_detours{cpu}, jitterscope_max_detour_ns{cpu},
jitterscope_source_noise_ns{kind,name}, jitterscope_source_detours{kind,name},
jitterscope_lost_events, jitterscope_lost_events_total,
jitterscope_unexplained_share, jitterscope_regressed_sources, and per CPU and
source (a source is its command; at most --max-sources names at once, the rest
`(other)`): jitterscope_source_share, _rate_hz, _period_seconds, _max_ns, ...

--print-rules and --print-dashboard print the Prometheus alert rules and the
Grafana dashboard shipped with this version, and exit.

EXAMPLES
  jitterscope monitor --cpus 1-3 --interval 5min --window 10s
  jitterscope monitor --interval 60s --window 5s --history /var/lib/jitterscope --port 9469
  curl -s localhost:9469/metrics | grep noise_ppm
  jitterscope monitor --print-rules > /etc/prometheus/rules.d/jitterscope.yml
  jitterscope monitor --cpus 1-3 --print-unit > /etc/systemd/system/jitterscope-monitor.service
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
        type=Path,
        metavar="DIR",
        help="directory of the rolling history (default ./jitterscope-monitor; with --print-unit "
        "/var/lib/jitterscope/monitor)",
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
    p.add_argument(
        "--max-sources",
        type=count_arg(1, 10**4),
        default=50,
        metavar="N",
        help="source names holding a metric label at once; the rest are (other) (default 50)",
    )
    shipped = p.add_mutually_exclusive_group()
    shipped.add_argument("--print-rules", action="store_true", help="print the shipped Prometheus alert rules and exit")
    shipped.add_argument("--print-dashboard", action="store_true", help="print the shipped Grafana dashboard and exit")
    p.add_argument(
        "--print-unit",
        action="store_true",
        help="print a hardened systemd unit running this jitterscope with these options, and exit",
    )


def _unit_args(args: argparse.Namespace) -> list[str]:
    """The options of this command line, spelled out for the unit's ExecStart (history aside)."""
    out = [] if args.cpus is None else ["--cpus", args.cpus]
    out += ["--interval", args.interval, "--window", args.window, "--threshold", args.threshold]
    out += [] if args.priority is None else ["--priority", args.priority]
    out += ["--no-trace"] if args.no_trace else []
    out += ["--keep", str(args.keep), "--max-size", args.max_size, "--port", str(args.port)]
    out += ["--baseline-windows", str(args.baseline_windows)]
    out += ["--max-sources", str(args.max_sources)]
    return out + ([] if args.windows is None else ["--windows", str(args.windows)])


def run(args: argparse.Namespace) -> int:
    if args.print_rules or args.print_dashboard:
        from jitterscope.monitor import shipped

        print(shipped.text(shipped.RULES if args.print_rules else shipped.DASHBOARD), end="")
        return 0
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
    max_bytes = parse_size(args.max_size, what="--max-size")
    threshold_ns = options.threshold_ns(args)
    priority = options.priority(args)
    if args.print_unit:
        from jitterscope.monitor.unit import DEFAULT_HISTORY, render_unit

        print(render_unit(_unit_args(args), (args.history or DEFAULT_HISTORY).absolute()), end="")
        return 0
    # scipy and pyarrow only once the options are known good: a typo is refused in a fraction of a second
    from jitterscope.monitor import Monitor, MonitorOptions

    opts = MonitorOptions(
        cpus=cpus,
        interval_s=interval,
        window_s=window,
        history=args.history or Path("jitterscope-monitor"),
        port=args.port,
        threshold_ns=threshold_ns,
        trace=not args.no_trace,
        priority=priority,
        max_windows=args.keep,
        max_bytes=max_bytes,
        baseline_windows=args.baseline_windows,
        max_sources=args.max_sources,
        stop_after=args.windows,
    )
    return Monitor(opts).run()
