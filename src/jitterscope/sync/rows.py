"""The rows of a sync run's tables as they cross the analysis steps (model -> causes -> critical -> build),
one TypedDict per table of schema.py, so a misspelt or missing column is a type error, not a null column."""

from __future__ import annotations

from typing import TypedDict


class Process(TypedDict):
    """One traced process (meta.json "processes")."""

    pid: int
    ppid: int
    comm: str
    complete: bool
    records: int
    dropped: int
    threads: int
    start_ns: int
    end_ns: int | None
    file: str


class Thread(TypedDict):
    pid: int
    tid: int
    name: str
    creator_tid: int
    create_ns: int | None
    start_ns: int
    end_ns: int  # its exit, else when it was seen to end (model.threads)
    joined_by: int
    join_ns: int | None


class Wait(TypedDict):
    wait: int
    pid: int
    tid: int
    op: str
    obj: int
    enter_ns: int
    release_ns: int | None
    exit_ns: int
    releaser_tid: int | None
    releaser_event: int | None
    event: int


class _IntervalBase(TypedDict):
    type: str
    pid: int
    tid: int
    obj: int
    start_ns: int
    end_ns: int
    wait: int | None
    releaser_tid: int | None


class Interval(_IntervalBase, total=False):
    """A jitter-table row: every interval T; `jitter_ns` and `id` are set once the threshold rule ran."""

    t_ns: int
    jitter_ns: int
    id: int
    cpu: int
    site: int


class Cause(TypedDict):
    jitter: int  # the interval's id
    side: str
    kind: str
    name: str
    ns: int


class Segment(TypedDict):
    pid: int
    tid: int
    start_ns: int
    end_ns: int
    after_wait: int


class _StepBase(TypedDict):
    tid: int
    kind: str  # run, wake, create
    start_ns: int
    end_ns: int
    wait: int


class Step(_StepBase, total=False):
    """A critical-path step; its index and booked jitter are set after the walk."""

    step: int
    jitter_ns: int


class Frame(TypedDict):
    frame: int
    id: int
    start_ns: int
    end_ns: int
    jitter_ns: int
    path_jitter_ns: int


class Object(TypedDict):
    pid: int
    obj: int
    kind: str
    symbol: str
    site: str


class Subframe(TypedDict):
    pid: int
    tid: int
    subframe: int
    start_ns: int
    end_ns: int
    jitter_ns: int
    warmup: bool
    forced: bool


class Event(TypedDict):
    pid: int
    tid: int
    op: str
    obj: int
    aux: int
    site: int
    enter_ns: int
    exit_ns: int
    cpu: int
    flags: int
    result: int


# One of the tables above, as its rows (build.py writes each with its schema).
Table = (
    list[Thread]
    | list[Wait]
    | list[Interval]
    | list[Cause]
    | list[Segment]
    | list[Step]
    | list[Frame]
    | list[Object]
    | list[Event]
    | list[Subframe]
)
