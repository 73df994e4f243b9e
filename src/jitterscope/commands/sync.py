"""Run a pthread program and measure its synchronisation jitter, critical path and kernel causes.

CMD runs with an LD_PRELOAD interposer that timestamps (TSC, the kernel
trace's clock) every contended pthread operation: mutex and rwlock locks
whose trylock failed, unlocks with sleepers, condvar waits, signals and
broadcasts with waiters, barrier waits, thread create/exit/join.  Each wait is
matched with the thread that released it and turned into the paper's jitter
types (lu u sw s bw b, plus barrier-wait, join-wait): an interval T above the
threshold N books T - N (--mode excess) or T (--mode whole).  With kernel
tracing (default, root) every late wake-up gets its cause: what ran on the
waiter's CPU, and whether the lock holder or signaller was preempted or
interrupted (holder delay).  Jitter propagates along the critical path
(created threads inherit, joins take the maximum).  CMD's stdout is its own
(byte for byte): jitterscope's summary goes to stderr after CMD ends (--json:
summary.json on stdout), and the exit code is CMD's.  Children CMD forks are followed (one log per process);
static binaries, locks inside libc and raw futex users are not seen.
Frames: call jitterscope_sync_frame(id) (native/jitterscope_sync.h; in Python
jitterscope.sync.frames.mark(id)) at each
frame boundary; subframes (--subframe, per thread, restarted at create/join)
are in subframes.parquet.  The run gets report.html (timeline per thread,
distributions per type) unless --no-report; `jitterscope compare` takes two
sync runs, `jitterscope export RUN -f perfetto` gives one timeline of threads,
waits and kernel causes.  Critical path and frames follow the first process.

EXAMPLES
  jitterscope sync -- ./solver --threads 2
  jitterscope sync --threshold 25us --mode whole --out runs/pigz -- pigz -k -p 2 big.tar
  jitterscope sync --no-trace --json -- xz -T2 -k data.bin
  jitterscope report runs/pigz; jitterscope export runs/pigz -f perfetto -o pigz.json
"""

from __future__ import annotations

import argparse
import sys

from jitterscope import options
from jitterscope.errors import JitterscopeError
from jitterscope.units import parse_cpulist, parse_duration_ns, parse_size


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--threshold",
        default="10us",
        metavar="TIME",
        help="base N: shorter synchronisation intervals are not jitter (default 10us, the paper's)",
    )
    p.add_argument(
        "--mode",
        choices=("excess", "whole"),
        default="excess",
        help="jitter of an interval T > N: T - N (excess, default) or T (whole)",
    )
    p.add_argument(
        "--lu-any",
        action="store_true",
        help="count lock-unlock intervals even when the acquirer did not sleep (default: only if it slept)",
    )
    p.add_argument(
        "--merge-at-barrier",
        action="store_true",
        help="critical path: barrier participants take the round's maximum jitter (default: paper's rule, "
        "create/join only)",
    )
    p.add_argument(
        "--subframe",
        default="330us",
        metavar="TIME",
        help="subframe length per thread, restarted at each create/join (default 330us, the paper's)",
    )
    p.add_argument(
        "--warmup-subframes",
        type=int,
        default=90,
        metavar="N",
        help="first subframes of each thread left out of the subframe statistics (default 90)",
    )
    p.add_argument("--cpus", metavar="LIST", help="CPUs the program may run on (default: all online)")
    p.add_argument("--no-trace", action="store_true", help="no kernel tracing: no causes, holder delay, non-sync")
    p.add_argument("--buffer", default="8M", metavar="SIZE", help="trace ring buffer per CPU (default 8M)")
    p.add_argument("--out", type=options.path_arg, metavar="DIR", help="run directory to create (must not exist)")
    p.add_argument("--no-report", action="store_true", help="do not write report.html into the run")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the summary")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the program to run")


def run(args: argparse.Namespace) -> int:
    from jitterscope import sysinfo
    from jitterscope.rundir import load_run, new_run_path
    from jitterscope.sync.model import Options
    from jitterscope.sync.render import render
    from jitterscope.sync.runner import SyncOptions, check_command, run_sync
    from jitterscope.sync.summary import read

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    threshold = parse_duration_ns(args.threshold, what="--threshold")
    if threshold < 1:
        raise JitterscopeError("--threshold must be at least 1ns")
    subframe = parse_duration_ns(args.subframe, what="--subframe")
    if subframe < 1000 or args.warmup_subframes < 0:
        raise JitterscopeError("--subframe must be at least 1us and --warmup-subframes at least 0")
    out = args.out or new_run_path(sysinfo.host(), "sync")
    if out.exists():
        raise JitterscopeError(f"{out}: already exists; choose a new --out directory")
    check_command(cmd)
    opts = SyncOptions(
        command=cmd,
        out_dir=out,
        cpus=parse_cpulist(args.cpus) if args.cpus else None,
        trace=not args.no_trace,
        buffer_kb=max(1, parse_size(args.buffer, what="--buffer") // 1024),
        report=not args.no_report,
        analysis=Options(
            threshold_ns=int(threshold),
            mode=args.mode,
            lu_sleep_only=not args.lu_any,
            merge_at_barrier=args.merge_at_barrier,
            subframe_ns=int(subframe),
            warmup_subframes=args.warmup_subframes,
        ),
    )
    run_dir, code = run_sync(opts)
    r = load_run(run_dir, check_tables=False)
    sys.stdout.flush()
    if args.json:
        options.print_json(r.summary)
    else:
        print(render(read(r), str(run_dir)), file=sys.stderr)
        if (run_dir / "report.html").exists():
            print(f"Report: {run_dir / 'report.html'}", file=sys.stderr)
    return code
