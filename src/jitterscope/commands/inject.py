"""Inject synthetic noise: wake every PERIOD and busy-loop BUSY on one CPU.

A synthetic daemon with a known period and busy time, the ground truth the
probe and the attribution are validated against (as De et al. 2007 validated its
tool).  It sleeps to absolute deadlines (the period never drifts), runs
SCHED_FIFO when permitted so each busy period is one contiguous stretch (only
its own scheduling policy changes), and is named NAME so the attribution shows
it as a thread source.  --truth writes the exact busy intervals in the probe's
clock (TSC): a comment line with tsc_hz and pid, then `start_tsc,end_tsc`
rows.  It stops after --duration, on Ctrl-C, or when its parent dies.

EXAMPLES
  jitterscope inject --cpu 1 --period 50ms --busy 2ms --duration 10s
  jitterscope inject --cpu 1 --period 10s --busy 2300us --name dummydaemon_1
  jitterscope inject --cpu 2 --period 4ms --busy 100us --policy other --truth truth.csv
  jitterscope inject --cpu 1 --period 20ms --busy 1ms --duration 5s --json
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from jitterscope import options
from jitterscope.errors import JitterscopeError
from jitterscope.units import DAY_S, format_ns, parse_duration_ns


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cpu", required=True, metavar="C", help="CPU to run on")
    p.add_argument("--period", required=True, metavar="TIME", help="time between wake-ups, e.g. 50ms, 10s")
    p.add_argument("--busy", required=True, metavar="TIME", help="busy-loop time per wake-up, e.g. 2ms, 2300us")
    p.add_argument("--duration", metavar="TIME", help="stop after this long (default: until Ctrl-C)")
    p.add_argument("--name", default="jitterscope-inj", help="task name, at most 15 bytes (default jitterscope-inj)")
    p.add_argument(
        "--policy", choices=("fifo", "other"), help="scheduling policy (default: fifo when permitted, else other)"
    )
    p.add_argument("--priority", type=int, default=50, metavar="N", help="SCHED_FIFO priority 1-99 (default 50)")
    p.add_argument("--truth", type=options.path_arg, metavar="FILE", help="write the exact busy intervals (TSC) here")
    options.add_json(p)


def _cpu(text: str) -> int:
    try:
        cpu = int(text)
    except ValueError:
        raise JitterscopeError(f"malformed --cpu {text!r}: give one CPU number, e.g. 1") from None
    if cpu < 0:
        raise JitterscopeError(f"--cpu {cpu} out of range")
    return cpu


def _check_truth_path(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise JitterscopeError(f"--truth {path}: is a directory")
    if not parent.is_dir():
        raise JitterscopeError(f"--truth {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise JitterscopeError(f"--truth {path}: not writable")


def run(args: argparse.Namespace) -> int:
    from jitterscope.measure.inject import Injector, inject  # numpy: only when it runs
    from jitterscope.measure.render import render_injection

    cpu = _cpu(args.cpu)
    period = parse_duration_ns(args.period, what="--period")
    busy = parse_duration_ns(args.busy, what="--busy")
    # the injector may run for less than a measurement's minimum (down to one period)
    duration = parse_duration_ns(args.duration, what="--duration", bounds=(1e-6, 7 * DAY_S)) if args.duration else None
    if args.truth is not None:
        _check_truth_path(args.truth)

    def announce(inj: Injector) -> None:
        if args.json:
            return
        policy = f"SCHED_FIFO {args.priority}" if inj.used_policy == "fifo" else "SCHED_OTHER"
        until = f"for {format_ns(duration)}" if duration else "until Ctrl-C"
        print(
            f"injecting on CPU {cpu}: busy {format_ns(busy)} every {format_ns(period)} as "
            f"'{args.name}' (pid {inj.pid}, {policy}), {until}",
            flush=True,
        )

    out = inject(cpu, period, busy, duration, args.name, args.policy or "auto", args.priority, args.truth, announce)
    if args.json:
        options.print_json(out)
    else:
        print(render_injection(out))
    return 0
