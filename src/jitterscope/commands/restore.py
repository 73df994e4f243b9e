"""Undo every system change left by an interrupted jitterscope run.

jitterscope journals each change it makes (tracefs instances and mounts,
sysctls, IRQ and task affinity, scheduling policies, background loads, scratch
directories) before making it, and undoes it on exit.  After a crash or
`kill -9`, this command (which every other jitterscope command also runs
first) puts everything back, then looks for what no journal names: trace
instances of processes that are gone, tracefs mounts jitterscope made whose
users all died, and temporary directories a killed run left unjournalled.  One
line per item says what happened to it:

  restored          it was changed and is now back as it was
  already as found  nothing to do (the process ended, the setting was back)
  kept              data was moved to safety, e.g. a killed cluster rank's capture
  could not undo    it is still changed; the reason follows (exit code 1)

EXAMPLES
  jitterscope restore            # undo what a killed run left behind
  jitterscope restore --json     # list what was undone, for scripts
  jitterscope restore --quiet    # say only what could not be undone (the session watchdog runs this)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from jitterscope import journal, mounts, options


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_json(p, "what was undone as JSON")
    p.add_argument("--quiet", action="store_true", help="print only what could not be undone")


# Temporary names jitterscope does not journal, or older versions did not (the random
# suffix of mkdtemp/mkstemp, no pid: protect calibrate's and the pipeline weights' working
# directories among them): a killed run left them behind.
_LEGACY = re.compile(
    r"^jitterscope-(cluster-r\d+|parse|scan|calibrate|weights)-[a-z0-9_]{8}$"
    r"|^jitterscope-truth-[a-z0-9_]{8}\.csv$"
)
_LEGACY_AGE_S = 600


def _in_use(paths: set[str]) -> bool:
    """Whether any process has a file open, mapped or as its directory below one of `paths`."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            links = [os.readlink(proc / "cwd")] + [os.readlink(f) for f in (proc / "fd").iterdir()]
            links += [ln.split(None, 5)[-1] for ln in (proc / "maps").read_text().splitlines() if "/" in ln]
        except OSError:
            continue
        if any(ln == p or ln.startswith(p + "/") for ln in links for p in paths):
            return True
    return False


def _legacy_temporaries() -> list[journal.Outcome]:
    now = time.time()
    old = []
    for d in (Path(tempfile.gettempdir()), Path("/dev/shm")):
        with contextlib.suppress(OSError):
            old += [p for p in d.iterdir() if _LEGACY.match(p.name) and now - p.lstat().st_mtime > _LEGACY_AGE_S]
    if not old or _in_use({str(p) for p in old}):
        return []
    out = []
    for p in old:
        with contextlib.suppress(OSError):
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            out.append(journal.Outcome("restored", f"removed {p} (left by a killed jitterscope run)"))
    return out


def _leftovers() -> list[journal.Outcome]:
    """What no journal names: instances of dead processes, mounts whose users died, and
    temporaries of older versions."""
    if os.geteuid() != 0:
        return []
    found = mounts.sweep() + _legacy_temporaries()
    from jitterscope.tracing.instances import clean_stale_instances
    from jitterscope.tracing.tracefs import find_tracefs

    root = find_tracefs()
    if root is not None:
        for name in clean_stale_instances(root):
            found.append(
                journal.Outcome("restored", f"removed trace instance {root}/instances/{name} (its process is gone)")
            )
    return found


def run(args: argparse.Namespace) -> int:
    undone = journal.recover_stale(quiet=True)
    found = _leftovers()
    failed = any(e.get("result") == "failed" for e in undone) or any(o.status == "failed" for o in found)
    if args.json:
        options.print_json({"undone": undone, "found": [vars(o) for o in found]})
        return 1 if failed else 0
    if getattr(args, "quiet", False):
        undone = [e for e in undone if e.get("result") == "failed"]
        found = [o for o in found if o.status == "failed"]
        if not failed:
            return 0
    if not undone and not found:
        print("nothing to restore: no interrupted jitterscope run left changes behind")
        return 0
    for e in undone:
        print(f"{journal.say(e)}  [{e.get('owner', 'interrupted run')}]")
    for o in found:
        print(journal.say({"op": "leftover", "result": o.status, "message": o.text}))
    if failed:
        print(
            "jitterscope: some changes could not be undone (see above); run restore again once the cause is fixed",
            file=sys.stderr,
        )
    return 1 if failed else 0
