"""Place tasks by observing them: co-schedule cache-heavy with cache-light tasks (OBS-L), spread heavy tasks
over LLC groups (OBS-X), credit CPU time to the light ones (OBS-C), keep feature users on capable cores (OBS-F).

Observes every task each quantum (per-task PMU counters where the machine has a
PMU; always the kernel's schedstat, context switches, faults and AVX-512 use;
else a declared weight or the one the workload publishes, and says which) and
applies the policies of Knauerhase et al. (IEEE Micro 2008) as a user-level
placement daemon: affinity, and for OBS-L's exact co-schedule SIGSTOP/SIGCONT
or the cgroup freezer per quantum.  Every change is journalled and undone on
exit, Ctrl-C and by `jitterscope restore` after kill -9.  Tasks are given by
PID, cgroup, or started here (--cmd, repeatable, or -- CMD), pinned round-robin
over --cpus in the order given (OBS-X places them instead).  Baselines:
--policy stock (the kernel, same pinning) and worst (heavy with heavy).
Writes a run directory with every observation and decision; `jitterscope
report RUN` draws the timeline of which task ran where with its weight.
--compare runs the mix under stock scheduling and each policy set, repetitions
interleaved, and prints per task throughput (per wall and per CPU second) and
noise, with geometric-mean speedups; --protect names the tasks whose noise
matters (policy P makes it OBS-L's objective).
Policies and every option's default: docs/commands/place.md.

EXAMPLES
  jitterscope place --policy L --declare jitterscope-cachebuster=heavy --declare jitterscope-spinloop=light \\
      --cmd jitterscope-cachebuster --cmd jitterscope-cachebuster --cmd jitterscope-spinloop \\
      --cmd jitterscope-spinloop --duration 10s
  jitterscope place --policy L,X,C --topology two-groups.yaml --tasks 4242,4243,4244,4245 --duration 60s
  jitterscope place --policy F --obs-f F2 --topology big-little.yaml -- jitterscope-spinloop --special 1000:1000
  jitterscope place --dry-run --cgroup /sys/fs/cgroup/batch --duration 5s
  jitterscope place --compare stock,L,worst --repeat 2 --duration 3s --declare jitterscope-cachebuster=heavy \\
      --cmd jitterscope-cachebuster --cmd jitterscope-cachebuster --cmd jitterscope-spinloop --cmd jitterscope-spinloop
  jitterscope place --profile cachegrind --ll 16MiB --labels-out weights.yaml --cmd ./mcf --cmd ./eon
  jitterscope place --profile probe --duration 4s -- ./my-solver --threads 1
  jitterscope place --overhead
"""

from __future__ import annotations

import argparse

from jitterscope import options
from jitterscope.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    t = p.add_argument_group("tasks")
    t.add_argument("--cmd", dest="cmds", action="append", metavar="CMD", help="start this command (repeatable)")
    t.add_argument("--tasks", action="append", metavar="PIDS", help="running processes to place, e.g. 4242,4243")
    t.add_argument("--cgroup", type=options.path_text, metavar="PATH", help="every process of this cgroup")
    t.add_argument("--cpus", metavar="LIST", help="CPUs to place on (default: every CPU of the topology)")
    t.add_argument(
        "--topology",
        type=options.path_text,
        metavar="FILE",
        help="LLC groups and LITTLE CPUs from FILE instead of sysfs",
    )
    w = p.add_argument_group("observation")
    w.add_argument(
        "--weights",
        default="auto",
        metavar="SRC",
        help="weight source: auto (pmu, else declared, else oracle), pmu, declared, oracle (default auto)",
    )
    w.add_argument(
        "--declare",
        action="append",
        metavar="SEL=W",
        help="declared weight: SEL a PID, program name or cgroup path; W heavy, light or a number (repeatable)",
    )
    w.add_argument(
        "--labels", type=options.path_text, metavar="FILE", help="declared weights from a YAML file (SEL: W)"
    )
    t.add_argument(
        "--protect",
        action="append",
        metavar="SEL",
        help="a protected task (PID, program name or "
        "cgroup path; repeatable): its noise is reported, and with policy P is OBS-L's objective",
    )
    w.add_argument(
        "--quantum", default="100ms", metavar="TIME", help="observation and scheduling quantum (default 100ms)"
    )
    c = p.add_argument_group("policies")
    c.add_argument(
        "--policy",
        default="L,X,C,F",
        metavar="LIST",
        help="L, X, C, F (comma list), or the baselines stock and worst (default L,X,C,F)",
    )
    c.add_argument(
        "--bins",
        type=int,
        default=4,
        metavar="N",
        help="OBS-L: weight bins, one decade each (default 4; 0 = raw weights)",
    )
    c.add_argument("--period", default="1s", metavar="TIME", help="OBS-X: rebalance period (default 1s)")
    c.add_argument("--credit", default="2%", metavar="PCT", help="OBS-C: C_credit (default 2%%)")
    c.add_argument(
        "--credit-norm",
        default="max",
        metavar="N",
        help="OBS-C: weights divided by the largest seen (max, default), raw, or a number",
    )
    c.add_argument("--obs-f", default="F2", metavar="F1|F2", help="OBS-F: F1 migrate and stay, F2 return (default)")
    c.add_argument(
        "--release-after", type=int, default=1, metavar="N", help="OBS-F2: clean quanta before release (default 1)"
    )
    c.add_argument(
        "--ban-after",
        type=int,
        default=0,
        metavar="N",
        help="OBS-F: faulting quanta before a lifetime ban from LITTLE CPUs (default 0: never)",
    )
    c.add_argument("--actuator", default="sigstop", metavar="NAME", help="OBS-L: sigstop (default) or freezer")
    r = p.add_argument_group("run")
    options.add_duration(p, default=None, help="stop after this long (default: when every task has ended)")
    r.add_argument("--dry-run", action="store_true", help="observe and print the decisions; change nothing")
    r.add_argument(
        "--compare",
        metavar="SETS",
        help="run the mix under each policy set, side by side: comma list, "
        "policies within a set joined by +, the first the baseline (e.g. stock,L,L+C,worst)",
    )
    r.add_argument(
        "--repeat",
        type=int,
        default=2,
        metavar="N",
        help="--compare: repetitions of every set, interleaved (default 2)",
    )
    pr = p.add_argument_group("stand-in weights (no PMU)")
    pr.add_argument(
        "--profile",
        metavar="METHOD",
        help="weigh each command offline and print a labels file: "
        "cachegrind (LL misses per instruction) or probe (a calibrated interference probe)",
    )
    pr.add_argument(
        "--ll",
        metavar="SIZE",
        help="--profile cachegrind: simulated LL size (default: this machine's last-level cache)",
    )
    pr.add_argument(
        "--ipc",
        type=float,
        default=1.0,
        metavar="X",
        help="--profile cachegrind: assumed instructions per cycle (default 1)",
    )
    pr.add_argument(
        "--labels-out",
        type=options.path_text,
        metavar="FILE",
        help="--profile: write the labels file here (default: stdout)",
    )
    r.add_argument(
        "--overhead",
        action="store_true",
        help="measure the observer's cost per context switch (pipe ping-pong with and without it) and exit",
    )
    r.add_argument("--out", type=options.path_text, metavar="DIR", help="run directory to create")
    options.add_json(p, "summary.json")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="a command to start")


def run(args: argparse.Namespace) -> int:
    import sys

    from jitterscope.place import plan, render, session
    from jitterscope.place.results import read_compare_summary, read_summary
    from jitterscope.rundir import load_run

    if args.overhead:
        from jitterscope.place.overhead import measure

        result = measure()
        options.print_json(result) if args.json else print(result["text"])
        return 0
    if args.profile:
        return _profile(args)
    p = plan.build(vars(args))
    p.argv = sys.argv
    if args.compare:
        from jitterscope.place import compare

        sets = compare.parse_sets(args.compare)
        if not 1 <= args.repeat <= 100:
            raise UsageError(f"--repeat {args.repeat}: give 1 to 100 repetitions")
        run_dir = compare.run(p, sets, args.repeat, progress=not args.json)
        run = load_run(run_dir)
        s = run.summary
        options.print_json(s) if args.json else print(render.render_compare(read_compare_summary(run), str(run_dir)))
        return 130 if s["ended_by"] == "interrupted" else 0
    run_dir = session.run(p, progress=not args.json)
    run = load_run(run_dir)
    if args.json:
        options.print_json(run.summary)
    else:
        print(render.render(read_summary(run), str(run_dir)))
    return 0


def _profile(args: argparse.Namespace) -> int:
    from pathlib import Path

    from jitterscope import atomic
    from jitterscope.place import profile

    text = profile.from_args(vars(args))
    if args.labels_out:
        atomic.write_text(Path(args.labels_out), text)
        print(f"labels written to {args.labels_out} (use: jitterscope place --labels {args.labels_out} ...)")
    else:
        print(text, end="")
    return 0
