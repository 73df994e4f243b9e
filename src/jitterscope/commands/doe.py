"""Factorial experiments on noise sources: which knob and which interference matter.

`doe run PLAN` runs a 2^k or 2^(k-p) factorial experiment described in a YAML
plan: each factor (background cache load, UDP flood over loopback, IRQ and task
affinity, kernel.timer_migration, SCHED_FIFO, THP, KSM, or your own commands)
is set to its low or high level through jitterscope's change journal, the
response (a `jitterscope measure` metric, or your command's wall time or printed
number) is measured, and everything is put back, for every treatment and
replication in random order.  Finished runs are journalled, so --resume
continues an interrupted experiment.  At the end it analyses the results.

`doe analyze DIR` prints the effects, the allocation of variation to every
factor and interaction (Jain's sign-table method) with confidence intervals and
significance, Kruskal-Wallis and Dunn-Holm tests, the share of significant
comparisons between groups and outliers; it writes analysis.json, analysis.txt
and boxplot.svg into DIR.  Plan reference: docs/commands/doe.md.

EXAMPLES
  jitterscope doe run examples/doe/udp-and-cache.yaml --dry-run
  jitterscope doe run examples/doe/udp-and-cache.yaml --out runs/doe1
  jitterscope doe run examples/doe/udp-and-cache.yaml --out runs/doe1 --resume
  jitterscope doe run big-plan.yaml --yes          # longer than the plan's budget
  jitterscope doe analyze runs/doe1
  jitterscope doe analyze runs/doe1 --log --json   # multiplicative model, JSON
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jitterscope import options


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="doe_command", metavar="{run,analyze}", required=True, parser_class=type(p))
    r = sub.add_parser(
        "run",
        help="run the experiment a plan describes, then analyse it",
        description="Run a factorial experiment from a YAML plan (see docs/commands/doe.md).",
    )
    r.add_argument("plan", type=options.path_arg, metavar="PLAN", help="YAML plan")
    r.add_argument(
        "--out",
        type=options.path_arg,
        metavar="DIR",
        help="experiment directory (default ./jitterscope-doe/<plan name>)",
    )
    r.add_argument("--resume", action="store_true", help="continue the experiment in DIR where it stopped")
    r.add_argument("--yes", action="store_true", help="run even if the estimate exceeds the plan's budget")
    r.add_argument(
        "--dry-run",
        action="store_true",
        help="check the plan and this machine, print design and estimate; change nothing",
    )
    a = sub.add_parser(
        "analyze",
        help="analyse a finished experiment directory",
        description="Analyse a finished experiment: effects, allocation of variation, tests.",
    )
    a.add_argument("dir", type=options.path_arg, metavar="DIR", help="experiment directory written by doe run")
    a.add_argument("--json", action="store_true", help="print the analysis as JSON only")
    a.add_argument("--log", action="store_true", help="also fit the multiplicative model (log10 of the response)")
    a.add_argument("--confidence", type=float, metavar="C", help="confidence level (default: the plan's, 0.95)")


def run(args: argparse.Namespace) -> int:
    from jitterscope.doe.plan import check_machine, load_plan
    from jitterscope.errors import JitterscopeError

    if args.doe_command == "analyze":
        from jitterscope.doe import render, runner

        if args.confidence is not None and not 0.5 <= args.confidence < 1:
            raise JitterscopeError(f"--confidence {args.confidence} must be in [0.5, 1)")
        result = runner.analyze_dir(args.dir, confidence=args.confidence, log=True if args.log else None)
        txt = runner.write_outputs(args.dir, result)
        print(render.to_json(result) if args.json else txt, end="\n" if args.json else "")
        return 0

    plan = load_plan(args.plan)
    check_machine(plan)  # every factor this machine cannot apply is reported before anything runs
    from jitterscope.doe import runner  # scipy: only for a plan known good, so a typo is refused at once

    print(runner.describe_plan(plan), file=sys.stderr)
    runner.check_budget(plan, args.yes or args.dry_run)
    if args.dry_run:
        return 0
    out = args.out or Path("jitterscope-doe") / plan.name
    try:
        runner.execute(plan, out, resume=args.resume)
    except KeyboardInterrupt:
        print(
            f"jitterscope: experiment interrupted; every change was undone. Continue with:\n"
            f"  jitterscope doe run {args.plan} --out {out} --resume",
            file=sys.stderr,
        )
        raise
    result = runner.analyze_dir(out)
    print(runner.write_outputs(out, result), end="")
    print(f"wrote {out}/analysis.txt, analysis.json, boxplot.svg", file=sys.stderr)
    return 0
