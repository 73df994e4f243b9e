"""Slow one process down by a known factor: a CFS bandwidth quota on a cgroup of its own.

A test that must act while a phase of the tool is running (a second Ctrl-C during the analysis) cannot
rely on that phase lasting longer than the test takes to react: a faster machine or a faster analysis
closes the window.  Under a quota of `share` of one CPU the phase lasts at least 1/share times its CPU
time, on any machine.  cgroup v2 (cpu.max) where its cpu controller is enabled, else v1's cpu hierarchy.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

PERIOD_US = 100_000
V2 = Path("/sys/fs/cgroup")
V2_HYBRID = Path("/sys/fs/cgroup/unified")
V1 = Path("/sys/fs/cgroup/cpu")


def _parent() -> tuple[Path, int] | None:
    """Where to make the cgroup, and its version (None: no CPU bandwidth control here)."""
    for root in (V2, V2_HYBRID):
        ctl = root / "cgroup.subtree_control"
        if ctl.exists() and "cpu" in ctl.read_text().split():
            return root, 2
    if (V1 / "cpu.cfs_quota_us").exists():
        return V1, 1
    return None


def _set(group: Path, version: int, share: float | None) -> None:
    if version == 2:
        (group / "cpu.max").write_text("max\n" if share is None else f"{int(share * PERIOD_US)} {PERIOD_US}\n")
    else:
        (group / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
        (group / "cpu.cfs_quota_us").write_text("-1\n" if share is None else f"{int(share * PERIOD_US)}\n")


class Throttle:
    def __init__(self, group: Path, version: int) -> None:
        self.group, self.version = group, version

    def set(self, share: float | None) -> None:
        """At most `share` of one CPU from now on (None: no limit)."""
        _set(self.group, self.version, share)

    def describe(self) -> str:
        """The group's limit, its throttling so far and its members, for a failure's message."""
        limit = ("cpu.max",) if self.version == 2 else ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        parts = []
        for name in (*limit, "cpu.stat", "cgroup.procs"):
            try:
                parts.append(f"{name}: {' '.join((self.group / name).read_text().split())}")
            except OSError as err:
                parts.append(f"{name}: {err.strerror}")
        return f"{self.group}: " + "; ".join(parts)


@contextlib.contextmanager
def cpu_quota(pid: int) -> Iterator[Throttle]:
    """`pid` (its threads, and the children it starts from now on) in a cgroup of its own, unlimited until
    `set`; on exit the limit goes and the cgroup is removed once empty.  Skips, naming why, without root or
    CPU bandwidth control."""
    where = _parent()
    if os.geteuid() != 0 or where is None:
        pytest.skip("needs root and a cgroup cpu controller (cpu.max or cpu.cfs_quota_us) to slow a process down")
    root, version = where
    group = root / f"jstest-throttle-{os.getpid()}-{pid}"
    group.mkdir()
    t = Throttle(group, version)
    try:
        (group / "cgroup.procs").write_text(f"{pid}\n")
        yield t
    finally:
        with contextlib.suppress(OSError):
            t.set(None)
        for p in (group / "cgroup.procs").read_text().split():  # still running: back where tests run
            with contextlib.suppress(OSError):
                (root / "cgroup.procs").write_text(f"{p}\n")
        group.rmdir()
