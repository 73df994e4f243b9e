"""Remove measured noise: audit isolation, plan from a run, apply, verify by re-measuring, revert.

  audit    every isolation knob for the CPUs to isolate: value, recommendation, verdict and why
  plan     from a measured run: each source with the knob or boot parameter that removes it, ranked
  apply    the runtime part of a plan (or --knob NAME=VALUE) through the journal, recorded for revert
  verify   measure (or take --before), apply, measure again; per targeted source: before -> after with
           compare's tests; exit 1 when a targeted source did not go down significantly
  revert   undo what apply/verify changed, newest first, re-reading every knob to prove it back
  status   what tune has changed and whether each knob still holds tune's value

Changes are journalled before they are made (a crash is undone by the next command or `jitterscope
restore`); what apply leaves changed is kept in a record under /var/lib/jitterscope/tune that survives
a reboot (runtime settings do not: revert then skips them and says so).

EXAMPLES
  jitterscope tune audit --cpus 1-3
  jitterscope measure --out runs/base && jitterscope tune plan runs/base --out plan.yaml
  jitterscope tune apply plan.yaml --dry-run
  jitterscope tune apply --knob vm.stat_interval=10 --knob irq.virtio4-input.affinity=0
  jitterscope tune verify plan.yaml --before runs/base         # exit 1 if a target did not go down
  jitterscope tune revert            # the last apply; --all for every record
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from jitterscope import options


def _move_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--move",
        action="append",
        default=[],
        metavar="NAME|PID",
        help="also move this user process (repeatable); by default only kernel threads and system daemons "
        "(systemd system services, processes of system users) are moved, other processes are listed",
    )


def _apply_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a runtime knob to set (repeatable); see `tune audit` for names",
    )
    p.add_argument("--force", action="store_true", help="accept a plan made on another host or kernel")


HELP = {  # each action's --help: what it does, then examples
    "audit": "Read every isolation knob for the CPUs to isolate; nothing is changed.\n\nEXAMPLES\n"
    "  jitterscope tune audit\n  jitterscope tune audit --cpus 2-7 --json | jq '.findings[] | "
    'select(.verdict == "not isolated")\'',
    "plan": "Map each source of a measured run to the knob or boot parameter that removes it.\n\nEXAMPLES\n"
    "  jitterscope tune plan runs/base\n  jitterscope tune plan runs/base --out plan.yaml   # review, "
    "edit, then apply or verify it\n  jitterscope tune plan runs/base --move my-daemon --move 4242   # move these "
    "user processes too",
    "apply": "Apply runtime knobs through the journal; keep a record for `tune revert`.\n\nEXAMPLES\n"
    "  jitterscope tune apply plan.yaml --dry-run\n  jitterscope tune apply --knob vm.stat_interval=10 "
    "--knob 'irq.*.affinity=0'\n  jitterscope tune apply plan.yaml --boot      # also the bootloader "
    "(reboot needed)",
    "verify": "Measure (or take --before), apply, measure again, test each targeted source with compare's tests.\n"
    "Exit 0: every testable target went down significantly; 1: one did not (or none was testable).\n\n"
    "EXAMPLES\n  jitterscope tune verify                          # plan from a 30 s baseline, keep "
    "the changes\n  jitterscope tune verify plan.yaml --before runs/base --revert\n"
    "  jitterscope tune verify --knob vm.stat_interval=10 --duration 60s --json",
    "revert": "Undo tune's changes newest first, re-reading every knob to prove it back.\n\nEXAMPLES\n"
    "  jitterscope tune revert\n  jitterscope tune revert --all --json",
    "status": "What tune has changed, knob by knob, and whether each still holds tune's value.\n\nEXAMPLES\n"
    "  jitterscope tune status",
}


def _action(sub: Any, name: str, summary: str) -> argparse.ArgumentParser:
    return options.add_action(sub, name, summary, HELP[name])


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = _action(sub, "audit", "state of every isolation knob for the CPUs to isolate")
    options.add_cpus(a, "CPUs to isolate (default: every online CPU but the lowest)")
    options.add_json(a, "every finding as JSON")
    a = _action(sub, "plan", "the knobs that remove each source of a measured run")
    a.add_argument("run", type=Path, metavar="RUN", help="a run directory from `jitterscope measure`")
    a.add_argument("--out", type=Path, metavar="PLAN", help="write the plan file (YAML) for apply/verify")
    _move_arg(a)
    options.add_json(a, "the plan as JSON")
    a = _action(sub, "apply", "apply a plan's runtime knobs (or --knob) through the journal")
    a.add_argument("plan", type=Path, nargs="?", metavar="PLAN", help="a plan file from `tune plan --out`")
    _apply_args(a)
    a.add_argument("--dry-run", action="store_true", help="show what would change; change nothing")
    a.add_argument(
        "--boot",
        action="store_true",
        help="also add the plan's boot parameters to the bootloader configuration (journalled; a reboot is needed)",
    )
    a.add_argument(
        "--boot-root",
        type=Path,
        metavar="DIR",
        help="edit the boot configuration under DIR (an image "
        "or chroot) instead of /; the bootloader is not regenerated",
    )
    options.add_json(a, "what changed as JSON")
    a = _action(sub, "verify", "measure, apply, measure again, and test each targeted source")
    a.add_argument("plan", type=Path, nargs="?", metavar="PLAN", help="plan file (default: plan from the baseline)")
    a.add_argument("--before", type=Path, metavar="RUN", help="baseline run (default: measure one now)")
    _move_arg(a)
    _apply_args(a)
    options.add_cpus(a)
    options.add_duration(
        a, default="30s", help="how long each measurement lasts (default 30s; with --before: that run's duration)"
    )
    options.add_threshold(a)
    options.add_priority(a)
    options.add_buffer(a)
    a.add_argument("--out", type=Path, metavar="DIR", help="directory for both runs and the page (must not exist)")
    a.add_argument(
        "--revert",
        action="store_true",
        help="undo the changes after measuring (default: keep them, recorded for `tune revert`)",
    )
    a.add_argument("--alpha", type=float, default=0.01, help="false discovery rate of the tests (default 0.01)")
    options.add_json(a, "the verification as JSON")
    a = _action(sub, "revert", "undo tune's changes, proving every knob back")
    a.add_argument("--all", action="store_true", help="every record, newest first (default: the last one)")
    a.add_argument("--record", type=Path, metavar="FILE", help="only this record (see `tune status`)")
    options.add_json(a, "the proof as JSON")
    a = _action(sub, "status", "what tune has changed, knob by knob")
    options.add_json(a, "the records as JSON")


def run(args: argparse.Namespace) -> int:
    from jitterscope.tune import actions

    return int(getattr(actions, args.action)(args))
