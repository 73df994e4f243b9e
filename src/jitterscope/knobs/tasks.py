"""Tasks: which may run on a CPU, whether they can move, and moving them (CPU affinity).

A kernel thread flagged PF_NO_SETAFFINITY (per-CPU kworkers, ksoftirqd,
migration, cpuhp...) is bound to its CPU by the kernel and cannot move
(include/linux/sched.h; kernel-per-CPU-kthreads.rst says what removes each);
every other task, user or kernel, can be moved with sched_setaffinity(2).
Every change is journalled per thread with the thread's start time, so a
recycled thread id is never touched when it is undone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.journal import Entry, Journal, process_start_time
from jitterscope.knobs.base import forget
from jitterscope.units import format_cpulist, parse_cpulist

PF_KTHREAD = 0x00200000  # include/linux/sched.h
PF_NO_SETAFFINITY = 0x04000000
DOC = "man sched_setaffinity(2), kernel-per-CPU-kthreads.rst: the CPUs a process's threads may run on"


@dataclass
class Task:
    pid: int  # the thread group (process)
    tid: int
    comm: str
    flags: int
    allowed: list[int]

    @property
    def kthread(self) -> bool:
        return bool(self.flags & PF_KTHREAD)

    @property
    def movable(self) -> bool:
        return not self.flags & PF_NO_SETAFFINITY


def stat_fields(tid: int | str) -> tuple[str, int] | None:
    """(comm, flags) of a thread from /proc/TID/stat, None if it is gone."""
    try:
        text = Path(f"/proc/{tid}/stat").read_text()
        return text[text.index("(") + 1 : text.rindex(")")], int(text[text.rindex(")") + 2 :].split()[6])
    except (OSError, ValueError, IndexError):
        return None


def threads(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


def tasks() -> list[Task]:
    """Every thread on the machine."""
    out = []
    for tdir in Path("/proc").glob("[0-9]*/task/[0-9]*"):
        tid = int(tdir.name)
        sf = stat_fields(f"{tdir.parent.parent.name}/task/{tid}")
        if sf is None:
            continue
        try:
            allowed = sorted(os.sched_getaffinity(tid))
        except OSError:
            continue
        out.append(Task(int(tdir.parent.parent.name), tid, sf[0], sf[1], allowed))
    return out


def set_affinity(j: Journal, tid: int, cpus: set[int], knob: str, comm: str) -> Entry | None:
    """Journal, then move one thread; None if it is gone or the kernel (its cpuset) refuses."""
    try:
        cur = os.sched_getaffinity(tid)
    except OSError:
        return None
    if cur == cpus:
        return None
    entry = j.begin(
        "affinity",
        pid=tid,
        start=process_start_time(tid),
        cpus=sorted(cur),
        value=format_cpulist(sorted(cpus)),
        form="cpulist",
        knob=knob,
        comm=comm,
        runtime=True,
    )
    try:
        os.sched_setaffinity(tid, cpus)
    except OSError:
        forget(j, entry)
        return None
    return entry


class TaskKnob:
    """task.PID.affinity: the CPUs every thread of process PID may run on."""

    runtime = True
    doc = DOC
    form = "cpulist"

    def __init__(self, pid: int, comm: str) -> None:
        self.pid, self.comm, self.name = pid, comm, f"task.{pid}.affinity"

    def exists(self) -> bool:
        sf = stat_fields(self.pid)
        return sf is not None and sf[0] == self.comm

    def read(self) -> str:
        return format_cpulist(sorted(os.sched_getaffinity(self.pid)))

    def normalise(self, value: Any) -> str:
        try:
            return format_cpulist(parse_cpulist(str(value)))
        except UsageError as err:
            raise UsageError(f"knob {self.name}: {err}") from None

    def apply(self, j: Journal, value: str) -> list[Entry]:
        if not self.exists():
            raise JitterscopeError(f"knob {self.name}: process {self.pid} ({self.comm}) is gone")
        cpus = set(parse_cpulist(value))
        done = [
            e
            for t in threads(self.pid)
            if (sf := stat_fields(t))
            and not sf[1] & PF_NO_SETAFFINITY
            and (e := set_affinity(j, t, cpus, self.name, self.comm))
        ]
        if any(os.sched_getaffinity(int(e["pid"])) != cpus for e in done if stat_fields(e["pid"])):
            raise JitterscopeError(f"knob {self.name}: a thread of {self.comm} did not take CPUs {value}")
        return done


def knob(ref: str) -> TaskKnob:
    if not ref.isdigit():
        raise UsageError(f"knob task.{ref}.affinity: {ref!r} is not a process id")
    sf = stat_fields(ref)
    if sf is None:
        raise UsageError(f"knob task.{ref}.affinity: no process {ref}")
    if sf[1] & PF_NO_SETAFFINITY:
        raise UsageError(f"knob task.{ref}.affinity: {sf[0]} is a per-CPU kernel thread; it cannot move")
    return TaskKnob(int(ref), sf[0])


def move_all(j: Journal, cpus: list[int], away: bool) -> list[Entry]:
    """Keep every movable task off `cpus` (away) or allow it on them; this process's own threads stay.

    A task pinned to those CPUs only is left alone: its owner meant it."""
    measured = set(cpus)
    mine = set(threads(os.getpid()))
    done = []
    for t in tasks():
        if t.tid in mine or not t.movable:
            continue
        cur = set(t.allowed)
        new = (cur - measured) if away else (cur | measured)
        if new and new != cur and (e := set_affinity(j, t.tid, new, f"task.{t.pid}.affinity", t.comm)):
            done.append(e)
    return done
