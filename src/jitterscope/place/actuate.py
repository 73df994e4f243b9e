"""How OBS-L keeps exactly one task per CPU runnable each quantum: protect's actuators, per task.

sigstop   SIGSTOP / SIGCONT to the task's process (group, when we started it);
          journalled once with protect's `protect_sigcont` entry, so a killed
          jitterscope leaves nothing stopped
freezer   a freezer cgroup of its own per task (protect's cgroups.py: v2
          cgroup.freeze, else v1 freezer.state), each journalled; undo thaws,
          moves the task back and removes the cgroup
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal
from jitterscope.place.tasks import Placed
from jitterscope.protect import cgroups

ACTUATORS = ("sigstop", "freezer")


class Actuator:
    def __init__(self, j: Journal, name: str, tasks: list[Placed]) -> None:
        if name not in ACTUATORS:
            raise JitterscopeError(f"unknown --actuator {name!r}: use {', '.join(ACTUATORS)}")
        self.name = name
        self.files: dict[int, tuple[Path, str, str]] = {}
        if name == "sigstop":
            cgroups.stoppable(j, [(p.pid, p.prog.group) for p in tasks])
            return
        h = cgroups.find("freezer")
        if h is None:
            raise JitterscopeError("--actuator freezer: no cgroup freezer is mounted here; use --actuator sigstop")
        for p in tasks:
            g = cgroups.create(j, h, f"jitterscope-place-{os.getpid()}-{p.pid}")
            cgroups.move(j, h, g, p.pid)
            f, on, off = (
                (g / "cgroup.freeze", "1", "0") if h.version == 2 else (g / "freezer.state", "FROZEN", "THAWED")
            )
            j.set_file(f, off)
            self.files[p.pid] = (f, on, off)

    def _act(self, p: Placed, stop: bool) -> None:
        if p.stopped == stop:
            return
        try:
            if self.name == "sigstop":
                sig = signal.SIGSTOP if stop else signal.SIGCONT
                os.killpg(p.pid, sig) if p.prog.group else os.kill(p.pid, sig)
            else:
                f, on, off = self.files[p.pid]
                f.write_text(on if stop else off)
        except (ProcessLookupError, FileNotFoundError):
            pass  # it ended: the engine drops it at its next observation
        p.stopped = stop

    def stop(self, p: Placed) -> None:
        self._act(p, True)

    def cont(self, p: Placed) -> None:
        self._act(p, False)
