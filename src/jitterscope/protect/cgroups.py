"""The cgroups the freezer and CFS actuators act on, created and undone through the journal.

jitterscope makes one cgroup per best-effort CPU, `jitterscope-protect-<pid>-cpu<N>`,
in the hierarchy the actuator needs (cgroup v2 `cgroup.freeze`, v1 `freezer`,
v2 `cpu.max`, v1 `cpu`), and moves the best-effort processes there.  Journal
entries, each written before its change and undone newest first:

  protect_cgroup  the directory: undone by moving every task still inside to the
                  parent and removing it (tasks forked there later go to the parent)
  protect_move    one process moved in: undone by moving it back where it was
  file            freezer.state / cgroup.freeze / cpu.cfs_quota_us / cpu.max: set back
  protect_sigcont processes that may be stopped: undone by SIGCONT (same start time only)

so a killed controller leaves no frozen, stopped or throttled program.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from jitterscope.errors import JitterscopeError
from jitterscope.journal import Entry, Journal, Outcome, process_start_time


@dataclass(frozen=True)
class Hierarchy:
    root: Path
    version: int  # 1 or 2
    controller: str  # freezer, cpu (v1) or "" (v2)


def _mounts() -> list[list[str]]:
    try:
        return [ln.split() for ln in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        return []


def find(controller: str, version: int | None = None) -> Hierarchy | None:
    """Where `controller` ("freezer" or "cpu") can be used: v2 if it offers it, else v1."""
    for f in _mounts():
        if len(f) > 3 and f[2] == "cgroup2" and version in (None, 2):
            root = Path(f[1])
            controllers = root / "cgroup.controllers"
            offered = controllers.read_text().split() if controllers.exists() else []
            # the freezer is built into every v2 cgroup; cpu must be offered by the root
            if controller == "freezer" or controller in offered:
                return Hierarchy(root, 2, "")
    for f in _mounts():
        if len(f) > 3 and f[2] == "cgroup" and version in (None, 1) and controller in f[3].split(","):
            return Hierarchy(Path(f[1]), 1, controller)
    return None


def current_group(h: Hierarchy, pid: int) -> Path | None:
    """The cgroup directory of `pid` in hierarchy `h`."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for ln in lines:
        hid, ctrls, path = ln.split(":", 2)
        if (h.version == 2 and hid == "0") or (h.version == 1 and h.controller in ctrls.split(",")):
            return h.root / path.lstrip("/")
    return None


def create(j: Journal, h: Hierarchy, name: str) -> Path:
    """A new cgroup `name` under the hierarchy's root, removed again on undo."""
    d = h.root / name
    j.begin("protect_cgroup", path=str(d), parent=str(h.root))
    try:
        d.mkdir()
    except OSError as err:
        raise JitterscopeError(f"cannot create cgroup {d}: {err.strerror}") from None
    return d


def move(j: Journal, h: Hierarchy, group: Path, pid: int) -> None:
    """Move the whole process `pid` into `group`, journalling where it was."""
    origin = current_group(h, pid)
    if origin is None:
        raise JitterscopeError(f"process {pid} ended before it could be moved into {group}")
    j.begin("protect_move", pid=pid, start=process_start_time(pid), origin=str(origin), group=str(group))
    try:
        (group / "cgroup.procs").write_text(str(pid))
    except OSError as err:
        raise JitterscopeError(f"cannot move process {pid} into {group}: {err.strerror}") from None


def stoppable(j: Journal, targets: list[tuple[int, bool]]) -> None:
    """Processes (pid, is_group) the controller may stop: SIGCONT them on undo."""
    j.begin("protect_sigcont", targets=[{"id": i, "group": g, "start": process_start_time(i)} for i, g in targets])


# --- undo (registered in journal.UNDO) ------------------------------------------------------


def _procs(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def undo_cgroup(e: Entry) -> Outcome:
    d, parent = Path(e["path"]), Path(e["parent"])
    if not d.exists():
        return Outcome("unchanged", f"cgroup {d} already removed")
    for f, thawed in (("cgroup.freeze", "0"), ("freezer.state", "THAWED")):
        if (d / f).exists():
            (d / f).write_text(thawed)  # a frozen task cannot leave promptly
    for pid in _procs(d):
        try:
            (parent / "cgroup.procs").write_text(str(pid))
        except ProcessLookupError:
            pass
    for _ in range(100):  # rmdir waits for exiting tasks to leave
        try:
            d.rmdir()
            return Outcome("restored", f"removed cgroup {d}")
        except FileNotFoundError:
            return Outcome("unchanged", f"cgroup {d} already removed")
        except OSError:
            time.sleep(0.02)
    d.rmdir()
    return Outcome("restored", f"removed cgroup {d}")


def undo_move(e: Entry) -> Outcome:
    pid = int(e["pid"])
    if process_start_time(pid) != e.get("start"):
        # possibly just now: a process told to end while it was stopped ends when resumed (above)
        return Outcome("unchanged", f"process {pid} has ended: nothing to move back")
    group, origin = Path(e["group"]), Path(e["origin"])
    if pid not in _procs(group):
        return Outcome("unchanged", f"process {pid} is no longer in {group}")
    (origin / "cgroup.procs").write_text(str(pid))
    return Outcome("restored", f"process {pid} moved back to cgroup {origin}")


def undo_sigcont(e: Entry) -> Outcome:
    done = []
    for t in e["targets"]:
        i = int(t["id"])
        if process_start_time(i) != t.get("start"):
            continue
        try:
            os.kill(-i if t.get("group") else i, signal.SIGCONT)
            done.append(f"{'process group' if t.get('group') else 'process'} {i}")
        except ProcessLookupError:
            continue
    if not done:
        return Outcome("unchanged", "no stoppable process left")
    return Outcome("restored", f"resumed {', '.join(done)} (SIGCONT; one told to end while stopped ends now)")
