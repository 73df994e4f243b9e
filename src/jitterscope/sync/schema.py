"""The tables of a `sync` run directory (docs/run-format.md, section "sync runs").

All times are ns since the run's t0 (meta.t0_tsc), in the clock of the kernel
trace.  Thread ids are kernel tids (the trace's pids).  Every wait names the
thread that released it, so the happens-before graph (and `whatif dvfs`'s
per-thread compute segments) can be rebuilt from `threads`, `segments` and `waits`.
"""

from __future__ import annotations

import pyarrow as pa

THREADS = pa.schema(
    [
        ("pid", pa.int32()),
        ("tid", pa.int32()),
        ("name", pa.string()),
        ("creator_tid", pa.int32()),
        ("create_ns", pa.int64()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("joined_by", pa.int32()),
        ("join_ns", pa.int64()),
    ]
)
EVENTS = pa.schema(
    [
        ("pid", pa.int32()),
        ("tid", pa.int32()),
        ("op", pa.string()),
        ("obj", pa.uint64()),
        ("aux", pa.uint64()),
        ("site", pa.uint64()),
        ("enter_ns", pa.int64()),
        ("exit_ns", pa.int64()),
        ("cpu", pa.int32()),
        ("flags", pa.int32()),
        ("result", pa.int32()),
    ]
)
WAITS = pa.schema(
    [
        ("wait", pa.int64()),
        ("pid", pa.int32()),
        ("tid", pa.int32()),
        ("op", pa.string()),
        ("obj", pa.uint64()),
        ("enter_ns", pa.int64()),
        ("release_ns", pa.int64()),
        ("exit_ns", pa.int64()),
        ("releaser_tid", pa.int32()),
        ("releaser_event", pa.int64()),
        ("event", pa.int64()),
    ]
)
JITTER = pa.schema(
    [
        ("id", pa.int64()),
        ("type", pa.string()),
        ("pid", pa.int32()),
        ("tid", pa.int32()),
        ("obj", pa.uint64()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("t_ns", pa.int64()),
        ("jitter_ns", pa.int64()),
        ("wait", pa.int64()),
        ("releaser_tid", pa.int32()),
        ("cpu", pa.int32()),
        ("site", pa.uint64()),
    ]
)
CAUSES = pa.schema(
    [
        ("jitter", pa.int64()),
        ("side", pa.string()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("ns", pa.int64()),
    ]
)
SEGMENTS = pa.schema(
    [
        ("pid", pa.int32()),
        ("tid", pa.int32()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("after_wait", pa.int64()),
    ]
)
CRITICAL_PATH = pa.schema(
    [
        ("step", pa.int32()),
        ("tid", pa.int32()),
        ("kind", pa.string()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("wait", pa.int64()),
        ("jitter_ns", pa.int64()),
    ]
)
FRAMES = pa.schema(
    [
        ("frame", pa.int64()),
        ("id", pa.uint64()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("jitter_ns", pa.int64()),
        ("path_jitter_ns", pa.int64()),
    ]
)
SUBFRAMES = pa.schema(
    [
        ("pid", pa.int32()),
        ("tid", pa.int32()),
        ("subframe", pa.int32()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("jitter_ns", pa.int64()),
        ("warmup", pa.bool_()),
        ("forced", pa.bool_()),
    ]
)
OBJECTS = pa.schema(
    [
        ("pid", pa.int32()),
        ("obj", pa.uint64()),
        ("kind", pa.string()),
        ("symbol", pa.string()),
        ("site", pa.string()),
    ]
)
TABLES = {
    "threads": THREADS,
    "events": EVENTS,
    "waits": WAITS,
    "jitter": JITTER,
    "causes": CAUSES,
    "segments": SEGMENTS,
    "critical_path": CRITICAL_PATH,
    "frames": FRAMES,
    "objects": OBJECTS,
    "subframes": SUBFRAMES,
}
