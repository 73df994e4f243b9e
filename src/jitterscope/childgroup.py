"""Children in a process group of their own, in jitterscope's session.

A child that a terminal's Ctrl-C or hang-up must not reach, or that a journal kills as a whole
(`Journal.process_group`), gets its own process group.  Not its own session: the kernel puts each
session in a scheduling autogroup of its own (kernel.sched_autogroup_enabled), and under a 50% CPU hog
on this 2-CPU VM (Linux 6.18) a child started in a new session ran some 40 times slower than in ours
(importing pydantic, numpy and pyarrow: 11.7 s against 0.3 s), long enough for protect's controller to
miss its ready-line deadline and for place to start nothing in two minutes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any


def own_group(preexec: Callable[[], object] | None = None) -> Callable[[], None]:
    """A subprocess.Popen `preexec_fn`: the child leads a new process group, then runs `preexec`.  (Popen's
    process_group= would do the first part, but not on Python 3.10.)"""

    def setup() -> None:
        os.setpgid(0, 0)
        if preexec is not None:
            preexec()

    return setup


def popen(args: Sequence[str], **kw: Any) -> subprocess.Popen[Any]:
    """subprocess.Popen(args, **kw) leading a new process group.  On Python 3.11+ through `process_group`,
    done in C after the fork: a `preexec_fn` makes Python run its fork handlers in this process, and a
    Ctrl-C landing in one (logging's lock release) is printed as "Exception ignored" and lost (whatif
    --apply then ended 0, not 130)."""
    if sys.version_info >= (3, 11):
        return subprocess.Popen(args, process_group=0, **kw)
    return subprocess.Popen(args, preexec_fn=own_group(), **kw)
