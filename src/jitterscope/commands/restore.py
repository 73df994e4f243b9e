"""Undo every system change left by an interrupted jitterscope run.

jitterscope journals each change it makes (tracefs instances, sysctls, IRQ and
task affinity, scheduling policies, background loads) before making it, and
undoes it on exit.  After a crash or `kill -9`, this command (which every other
jitterscope command also runs first) puts everything back.

EXAMPLES
  jitterscope restore            # undo what a killed run left behind
  jitterscope restore --json     # list what was undone, for scripts
"""

from __future__ import annotations

import argparse
import json

from jitterscope import journal


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print what was undone as JSON")


def run(args: argparse.Namespace) -> int:
    undone = journal.recover_stale(quiet=args.json)
    if args.json:
        print(json.dumps({"undone": undone}, indent=2))
    elif not undone:
        print("nothing to restore: no interrupted jitterscope run left changes behind")
    else:
        for e in undone:
            what = e.get("path") or e.get("pid") or e.get("pgid") or e.get("argv") or e.get("command")
            print(f"restored {e['op']}: {what}")
    return 0
