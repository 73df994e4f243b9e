"""A place run's raw record stream, `place.raw`: what the engine sees, appended as it runs (raw first).

JSON lines, one record each, appended by one writer and handed to the kernel at the end of every
loop turn (a kill -9 of jitterscope then loses nothing but the turn in progress), fsynced as the run
stops.  The run's tables and summary are built from it (build.py), after a normal stop and by
`jitterscope analyze` after a kill alike.  Records, by their key `k`:

    run   the run's fixed facts (summary.json's `run` without wall_ns and ended_by), first
    o     an observation row (schema.OBSERVATIONS)
    d     a decision row (schema.DECISIONS)
    c     the cost (ns) of the snapshots taken since the last `c`
    s     OBS-X: [time, balanced] where the groups' balance changed
    t     every task's state (results.TaskState) at `t_ns`: at the loop's start, then at most once a second
    end   wall_ns, ended_by and the tasks' final states with their heartbeat latencies (results.TaskEnd)

A kill can tear the last record (a partial line): the reader drops it and says so.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from typing_extensions import TypedDict

from jitterscope.place.results import Decision, Observation, RunFacts, TaskEnd, TaskState

RAW = "place.raw"
STATE_EVERY_NS = 1_000_000_000


class RawWriter:
    """Appends records to `place.raw` (or nowhere, `path` None: an engine without a run directory)."""

    def __init__(self, path: Path | None) -> None:
        self._f: IO[str] | None = open(path, "a", encoding="utf-8") if path is not None else None  # noqa: SIM115
        self._costs: list[int] = []
        self._balanced: bool | None = None
        self.state_ns = -STATE_EVERY_NS  # when the tasks' states were last written

    def _put(self, **rec: object) -> None:
        if self._f is not None:
            self._f.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def run(self, facts: RunFacts) -> None:
        self._put(k="run", run=facts)

    def observation(self, row: Observation) -> None:
        self._put(k="o", r=row)

    def decision(self, d: Decision) -> None:
        self._put(k="d", r=d)

    def cost(self, ns: int) -> None:
        self._costs.append(ns)

    def split(self, t_ns: int, balanced: bool) -> None:
        """OBS-X's balance at `t_ns`: only its changes are written (the fraction weighs each by its span)."""
        if balanced != self._balanced:
            self._balanced = balanced
            self._put(k="s", v=[t_ns, balanced])

    def states(self, t_ns: int, tasks: list[TaskState]) -> None:
        self.state_ns = t_ns
        self._put(k="t", t_ns=t_ns, tasks=tasks)

    def end(self, wall_ns: int, ended_by: str, tasks: list[TaskEnd]) -> None:
        self._put(k="end", wall_ns=wall_ns, ended_by=ended_by, tasks=tasks)

    def flush(self) -> None:
        """Hand what is buffered to the kernel: it survives a kill of this process from here on."""
        if self._costs:
            self._put(k="c", ns=self._costs)
            self._costs = []
        if self._f is not None:
            self._f.flush()

    def close(self) -> None:
        """Flush and fsync (the session fsyncs the run directory after `stop`)."""
        self.flush()
        if self._f is not None:
            os.fsync(self._f.fileno())
            self._f.close()
            self._f = None


class RawEnd(TypedDict):
    wall_ns: int
    ended_by: str
    tasks: list[TaskEnd]


@dataclass
class Raw:
    """What a run's `place.raw` holds, read back."""

    run: RunFacts | None = None
    observations: list[Observation] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)
    splits: list[tuple[int, bool]] = field(default_factory=list)
    states: list[TaskState] = field(default_factory=list)  # the last `t` record's
    states_ns: int | None = None  # its time; None: the loop never started
    end: RawEnd | None = None  # None: killed before the end
    torn: int = 0  # bytes of a last record cut by a kill (dropped)
    last_ns: int = 0  # the latest time any record carries

    @property
    def tasks(self) -> list[TaskEnd]:
        """The tasks' final states: from the end record, else the last states written."""
        if self.end is not None:
            return list(self.end["tasks"])
        return [
            {
                **s,
                "end": s["end"] or "running when the run was cut short",
                "beats": 0,
                "beats_lost": 0,
                "latency_ns": None,
            }
            for s in self.states
        ]


def read_raw(path: Path) -> Raw:
    """Every whole record of `path`; a torn (or unreadable) tail is dropped and counted in `torn`."""
    raw, data = Raw(), path.read_bytes()
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        try:
            rec = json.loads(data[pos:nl])
            _add(raw, rec)
        except (ValueError, KeyError, TypeError, IndexError):
            break  # one writer appends whole lines: only a kill's torn tail is unreadable
        pos = nl + 1
    raw.torn = len(data) - pos
    return raw


def _add(raw: Raw, rec: Any) -> None:
    """One record (a JSON object as json.loads gives it); a malformed one raises (a torn tail)."""
    k = rec["k"]
    if k == "o":
        raw.observations.append(rec["r"])
        raw.last_ns = max(raw.last_ns, int(rec["r"]["end_ns"]))
    elif k == "d":
        raw.decisions.append(rec["r"])
        raw.last_ns = max(raw.last_ns, int(rec["r"]["t_ns"]))
    elif k == "c":
        raw.costs.extend(int(x) for x in rec["ns"])
    elif k == "s":
        raw.splits.append((int(rec["v"][0]), bool(rec["v"][1])))
    elif k == "t":
        raw.states, raw.states_ns = rec["tasks"], int(rec["t_ns"])
        raw.last_ns = max(raw.last_ns, raw.states_ns)
    elif k == "end":
        raw.end = {"wall_ns": int(rec["wall_ns"]), "ended_by": str(rec["ended_by"]), "tasks": rec["tasks"]}
    elif k == "run":
        raw.run = rec["run"]
    else:
        raise ValueError(k)
