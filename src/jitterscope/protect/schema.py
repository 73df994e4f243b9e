"""The protect run's table schemas (registered as the `protect` run kind in rundir.py)."""

from __future__ import annotations

import pyarrow as pa

SAMPLES = pa.schema(
    [
        ("cpu", pa.int32()),
        ("t_ns", pa.int64()),
        ("window_ns", pa.int64()),
        ("protected", pa.bool_()),
        ("read_bytes", pa.int64()),
        ("write_bytes", pa.int64()),
        ("progress_bytes", pa.int64()),
        ("cpu_ns", pa.int64()),
        ("metric", pa.int64()),
        ("pressure", pa.float64()),
        ("suspend_ns", pa.int64()),
        ("flags", pa.int32()),
    ]
)
SUSPENSIONS = pa.schema(
    [
        ("cpu", pa.int32()),
        ("t_ns", pa.int64()),
        ("requested_ns", pa.int64()),
        ("actual_ns", pa.int64()),
        ("stop_latency_ns", pa.int64()),
        ("issue_ns", pa.int64()),
        ("resume_ns", pa.int64()),
        ("clipped", pa.bool_()),
        ("confirmed", pa.bool_()),
    ]
)
ITERATIONS = pa.schema(
    [("t_ns", pa.int64()), ("latency_ns", pa.int64()), ("seq", pa.int64()), ("protected", pa.bool_())]
)
