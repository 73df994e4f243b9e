"""The tables of a pipeline run directory (kind `pipeline`, docs/run-format.md).

All times are nanoseconds since the run's t0 (meta.t0_tsc), in the TSC clock
the kernel trace also uses.
"""

from __future__ import annotations

import pyarrow as pa

# One row per completed iteration: released, first sub-box started, last ended; latency = end - release.
ITERATIONS = pa.schema(
    [
        ("iteration", pa.int64()),
        ("release_ns", pa.int64()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("latency_ns", pa.int64()),
    ]
)
# One row per sub-box per iteration (runs with timers): start relative to the iteration's release.
SUBBOXES = pa.schema(
    [
        ("iteration", pa.int64()),
        ("subbox", pa.string()),
        ("box", pa.string()),
        ("thread", pa.int32()),
        ("start_ns", pa.int64()),
        ("duration_ns", pa.int64()),
    ]
)
# Each sink's digest of its frame, per iteration (bit-identical outputs have equal digests).
OUTPUTS = pa.schema([("iteration", pa.int64()), ("sink", pa.string()), ("digest", pa.uint64())])
# Traced runs: time other contexts took on the pipeline's CPUs during each iteration, per source.
ATTRIBUTION = pa.schema(
    [("iteration", pa.int64()), ("cpu", pa.int32()), ("kind", pa.string()), ("name", pa.string()), ("ns", pa.int64())]
)

TABLES = {"iterations": ITERATIONS, "subboxes": SUBBOXES, "outputs": OUTPUTS, "attribution": ATTRIBUTION}
