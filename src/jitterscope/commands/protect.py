"""Protect a latency-critical program from best-effort co-runners by duty-cycling them.

Every Ts (--sample) a controller thread pinned to each best-effort CPU reads a
signal (their bandwidth, the critical program's slack, the slowdown of a pointer
chase on a protected CPU while they run, CPU time) and, when it is at or over the threshold,
suspends that CPU's best-effort work for S (--suspend) through an actuator: the
thesis's real-time blocker (default), SCHED_DEADLINE, SIGSTOP, the cgroup
freezer, CFS bandwidth or resctrl MBA.  Under persistent excess the best-effort
share is Ts/(Ts+S): 10% at 100us/900us, 50% at 500us/500us.  --sampling event:
no timer; the thread sleeps until a perf counter overflows at the budget
(threshold x Ts of LLC lines with a PMU; here the co-runners' task-clock stands
in).  Runs until the critical program ends, --duration, or Ctrl-C; every change
is journalled, so nothing is left stopped, frozen or throttled (after kill -9:
`jitterscope restore`).  Writes a run directory with every sample, decision and
suspension, and prints the critical latency and the best-effort progress it cost
(--compare: protected and unprotected phases interleaved).  `protect calibrate`
sweeps the best-effort share for the slack law; `protect reduction` turns
bandwidth tables into the thesis's Table 4.3.  Signals, actuators, laws:
docs/commands/protect.md.

EXAMPLES
  jitterscope protect --critical-cmd 'jitterscope-chase --period-ns 1000000' \\
      --best-effort-cmd 'jitterscope-synload' --duration 10s --compare 1s
  jitterscope protect --critical 4242 --best-effort 5151,5152 --actuator sigstop --signal cputime
  jitterscope protect --critical-cmd ./app --best-effort-cmd 'make -j1' --sampling event --sample 1ms \\
      --threshold 50% --suspend 1ms
  jitterscope protect --critical-cmd './pipeline' --best-effort-cmd 'xz -T1 -9 -k big.tar' \\
      --sample 500us --suspend 500us --actuator freezer --duration 60s
  jitterscope protect --replay counters.csv --threshold 1GB/s --json
  jitterscope protect calibrate --critical-cmd ./pipeline --best-effort-cmd 'make -j1' --out calib.json
  jitterscope protect reduction --thesis
"""

from __future__ import annotations

import argparse
import sys

from jitterscope import options


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        nargs="?",
        default="run",
        choices=("run", "calibrate", "reduction"),
        help="run (default), calibrate (the slack law's sweep) or reduction (Table 4.3)",
    )
    g = p.add_argument_group("programs")
    g.add_argument("--critical", metavar="PID", help="the latency-critical process (already running)")
    g.add_argument("--critical-cmd", metavar="CMD", help="start this command as the critical program")
    g.add_argument(
        "--critical-page", type=options.path_text, metavar="PATH", help="report page a --critical PID publishes in"
    )
    g.add_argument("--best-effort", action="append", metavar="PID,...", help="best-effort processes")
    g.add_argument(
        "--best-effort-cmd",
        action="append",
        metavar="CMD",
        help="start this best-effort command (repeat for several; round-robin over --cpus)",
    )
    g.add_argument(
        "--best-effort-cgroup",
        type=options.path_text,
        metavar="PATH",
        help="every process of this cgroup is best-effort",
    )
    g.add_argument("--cpus", metavar="LIST", help="best-effort CPUs (default: the upper half of the online CPUs)")
    g.add_argument("--critical-cpus", metavar="LIST", help="critical CPUs (default: every other online CPU)")
    c = p.add_argument_group("control")
    c.add_argument("--sample", metavar="TIME", help="sampling interval Ts (default 100us)")
    c.add_argument("--suspend", metavar="TIME", help="suspension S (default 900us)")
    c.add_argument(
        "--signal",
        metavar="NAME",
        help="auto (default), pmu, resctrl, report, slack, noise, cputime, replay, always, none",
    )
    c.add_argument(
        "--threshold",
        metavar="BW|PCT|TIME",
        help="e.g. 2GB/s, read=2GB/s,write=1GB/s, 25%% of the peak (default), slack 100us or 10%%",
    )
    c.add_argument("--peak", metavar="BW", help="peak bandwidth a percentage refers to (default: measured)")
    c.add_argument(
        "--actuator", metavar="NAME", help="rt (default), deadline, sigstop, freezer[:v1|:v2], cfs[:v1|:v2], mba, none"
    )
    c.add_argument("--law", metavar="NAME", help="fixed (default), proportional, slack")
    c.add_argument(
        "--sampling",
        metavar="HOW",
        help="timer (default: read the signal every Ts) or event (sleep "
        "until a counter overflows at the budget, threshold x Ts: "
        "pmu, or cputime where there is no PMU)",
    )
    c.add_argument("--gain", type=float, metavar="K", help="proportional: S = K x (pressure - 1) x Ts (default 10)")
    c.add_argument("--suspend-min", metavar="TIME", help="proportional: shortest S (default Ts)")
    c.add_argument("--suspend-max", metavar="TIME", help="proportional: longest S (default 4 x --suspend)")
    c.add_argument("--deadline", metavar="TIME", help="the critical program's latency bound (slack signal/law)")
    c.add_argument(
        "--calibration", type=options.path_text, metavar="FILE", help="the slack law's sweep, from 'protect calibrate'"
    )
    options.add_priority(p, help="SCHED_FIFO priority of the control threads (default fifo:50)")
    r = p.add_argument_group("run")
    options.add_duration(p, default=None, help="stop after this long (default: when the critical program ends)")
    r.add_argument("--compare", metavar="TIME", help="alternate unprotected and protected phases of this length")
    r.add_argument(
        "--replay",
        type=options.path_text,
        metavar="CSV",
        help="run the law on recorded counters (t_us,read_bytes,write_bytes)",
    )
    r.add_argument("--shares", metavar="LIST", help="calibrate: best-effort shares to sweep (default 1,.5,.25,.1,0)")
    r.add_argument("--warmup", metavar="TIME", help="calibrate: leave out each point's first TIME of heartbeats")
    r.add_argument("--thesis", action="store_true", help="reduction: the thesis's Tables 4.1 and 4.2")
    r.add_argument(
        "--congested", type=options.path_text, metavar="CSV", help="reduction: bandwidth table without duty-cycling"
    )
    r.add_argument(
        "--protected", type=options.path_text, metavar="CSV", help="reduction: bandwidth table with duty-cycling"
    )
    r.add_argument(
        "--out", type=options.path_text, metavar="PATH", help="run directory to create (calibrate: the file to write)"
    )
    options.add_json(p, "summary.json")


def run(args: argparse.Namespace) -> int:
    if args.action == "reduction":
        from jitterscope.protect.analysis import reduction_command

        return reduction_command(args)
    if args.action == "calibrate":
        from jitterscope.protect.calibrate import calibrate_command

        return calibrate_command(args)
    from jitterscope.protect import plan, render, session
    from jitterscope.rundir import load_run

    a = vars(args)
    a["priority"] = options.priority(args)
    p = plan.build(a)
    p.progress = not args.json
    run_dir, out = session.run(p)
    run_ = load_run(run_dir)
    if out.summary is None:  # session.run returns only once the run is built
        raise AssertionError("protect: the run was not built")
    if args.json:
        options.print_json(out.summary)
    else:
        print(render.render(out.summary, run_.meta, str(run_dir)))  # what was built, checked by load_run
    if out.error and out.ended_by != "interrupted":  # a helper died: the run is kept, the command fails
        print(f"jitterscope: error: the run was cut short: {out.ended_by}", file=sys.stderr)
        return 1
    return 0
