"""The tables of place runs and comparisons (the `place` and `place-compare` run kinds in rundir.py;
docs/run-format.md)."""

from __future__ import annotations

import pyarrow as pa

_I64 = pa.int64()
OBSERVATIONS = pa.schema(
    [
        ("pid", pa.int32()),
        ("name", pa.string()),
        ("start_ns", _I64),
        ("end_ns", _I64),
        ("cpu", pa.int32()),
        ("last_cpu", pa.int32()),
        ("run_ns", _I64),
        ("wait_ns", _I64),
        ("slices", _I64),
        ("vcsw", _I64),
        ("ivcsw", _I64),
        ("minflt", _I64),
        ("majflt", _I64),
        ("ops", _I64),
        ("specials", _I64),
        ("faults", _I64),
        ("avx512_ms", _I64),
        ("cycles", _I64),
        ("llc_misses", _I64),
        ("instructions", _I64),
        ("llc_refs", _I64),
        ("weight", pa.float64()),
        ("source", pa.string()),
    ]
)
DECISIONS = pa.schema(
    [
        ("t_ns", _I64),
        ("policy", pa.string()),
        ("pid", pa.int32()),
        ("name", pa.string()),
        ("action", pa.string()),
        ("cpu", pa.int32()),
        ("value", pa.float64()),
        ("reason", pa.string()),
    ]
)
# place --compare (kind place-compare): one row per repetition, policy set and task (place/compare.py)
RESULTS = pa.schema(
    [
        ("repetition", pa.int32()),
        ("policies", pa.string()),
        ("run", pa.string()),
        ("task", pa.int32()),
        ("name", pa.string()),
        ("pid", pa.int32()),
        ("protected", pa.bool_()),
        ("wall_ns", _I64),
        ("ops", _I64),
        ("run_ns", _I64),
        ("wait_ns", _I64),
        ("ivcsw", _I64),
        ("ops_per_s", pa.float64()),
        ("ops_per_cpu_s", pa.float64()),
        ("wait_per_cpu_s", pa.float64()),
        ("preempt_per_cpu_s", pa.float64()),
        ("latency_p99_ns", pa.float64()),
        ("alive", pa.bool_()),
        ("coheavy_fraction", pa.float64()),
    ]
)
