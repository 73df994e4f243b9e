"""numpy views of jitterscope-traceparse's output records.

Must match native/trace_records.h; tests/integration/test_trace_layout.py
compares these dtypes with `jitterscope-traceparse --layout`.
"""

from __future__ import annotations

import numpy as np

ACTIVITY_DTYPE = np.dtype(
    [
        ("start_tsc", "<i8"),
        ("end_tsc", "<i8"),
        ("cpu", "<i4"),
        ("pid", "<i4"),
        ("name", "<u4"),
        ("detail", "<u4"),
        ("depth", "<i2"),
        ("kind", "u1"),
        ("flags", "u1"),
        ("reserved", "<u4"),
    ]
)
SEGMENT_DTYPE = np.dtype([("start_tsc", "<i8"), ("end_tsc", "<i8"), ("cpu", "<i4"), ("owner", "<u4")])
PIECE_DTYPE = np.dtype([("detour", "<i8"), ("ns", "<i8"), ("start_ns", "<i8"), ("owner", "<u4"), ("reserved", "<u4")])
CONTAINER_DTYPE = np.dtype("<u4")
NO_CONTAINER = 0xFFFFFFFF

# enum js_kind, in order
KINDS = ["thread", "irq", "softirq", "nmi", "work", "timer"]
CLIPPED_START = 1
CLIPPED_END = 2
PREEMPTED = 4  # a thread slice that ended with the task still runnable
