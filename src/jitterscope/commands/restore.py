"""Undo every system change left by an interrupted jitterscope run.

jitterscope journals each change it makes (tracefs instances and mounts,
sysctls, IRQ and task affinity, scheduling policies, background loads, scratch
directories) before making it, and undoes it on exit.  After a crash or
`kill -9`, this command (which every other jitterscope command also runs
first) puts everything back, then looks for what no journal names: trace
instances of processes that are gone, and tracefs mounts jitterscope made whose
users all died.  One line per item says what happened to it:

  restored          it was changed and is now back as it was
  already as found  nothing to do (the process ended, the setting was back)
  kept              data was moved to safety, e.g. a killed cluster rank's capture
  could not undo    it is still changed; the reason follows (exit code 1)

EXAMPLES
  jitterscope restore            # undo what a killed run left behind
  jitterscope restore --json     # list what was undone, for scripts
"""

from __future__ import annotations

import argparse
import os
import sys

from jitterscope import journal, options


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_json(p, "what was undone as JSON")


def _leftovers() -> list[journal.Outcome]:
    """What no journal names: instances of dead processes, mounts whose users died."""
    if os.geteuid() != 0:
        return []
    found = journal.sweep_mounts()
    from jitterscope.tracing.session import clean_stale_instances
    from jitterscope.tracing.tracefs import find_tracefs

    root = find_tracefs()
    if root is not None:
        for name in clean_stale_instances(root):
            found.append(journal.Outcome("restored", f"removed trace instance {root}/instances/{name} "
                                                     f"(its process is gone)"))
    return found


def run(args: argparse.Namespace) -> int:
    undone = journal.recover_stale(quiet=True)
    found = _leftovers()
    failed = any(e.get("result") == "failed" for e in undone) or any(o.status == "failed" for o in found)
    if args.json:
        options.print_json({"undone": undone, "found": [vars(o) for o in found]})
        return 1 if failed else 0
    if not undone and not found:
        print("nothing to restore: no interrupted jitterscope run left changes behind")
        return 0
    for e in undone:
        print(f"{journal.say(e)}  [{e.get('owner', 'interrupted run')}]")
    for o in found:
        print(journal.say({"result": o.status, "message": o.text}))
    if failed:
        print("jitterscope: some changes could not be undone (see above); run restore again once the "
              "cause is fixed", file=sys.stderr)
    return 1 if failed else 0
