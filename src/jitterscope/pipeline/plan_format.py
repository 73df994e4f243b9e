"""The pipeline runtime's binary layouts, mirrored from native/pipeline_records.h.

The dtypes must match the C structs exactly;
tests/integration/test_pipeline_layout.py compares them with what
`jitterscope-pipeline --layout` reports from the compiler.
"""

from __future__ import annotations

import numpy as np

PLAN_MAGIC = b"JSPPLAN\0"
RESULT_MAGIC = b"JSPIPE\0\0"
HEARTBEAT_MAGIC = b"JSPBEAT\0"
VERSION = 1
MAX_PORTS = 8
MAX_PARAMS = 8
CPU_WORDS = 16
HEARTBEAT_RING = 4096

FLAG_MLOCK, FLAG_HUGEPAGES, FLAG_GUARD, FLAG_TIMERS = 1, 2, 4, 8
WAIT_MODES = {"spin": 0, "futex": 1, "hybrid": 2}
OP_WAIT, OP_EXEC, OP_SIGNAL = 1, 2, 3
NO_SINK = 0xFFFFFFFF
RESULT_COMPLETE, RESULT_TIMERS, RESULT_INTERRUPTED, RESULT_HUNG = 1, 2, 4, 8

PLAN_HEADER = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("header_size", "<u4"),
        ("subbox_size", "<u4"),
        ("op_size", "<u4"),
        ("thread_size", "<u4"),
        ("signal_size", "<u4"),
        ("n_subboxes", "<u4"),
        ("n_ops", "<u4"),
        ("n_threads", "<u4"),
        ("n_signals", "<u4"),
        ("n_sinks", "<u4"),
        ("n_consts", "<u4"),
        ("n_strings", "<u4"),
        ("flags", "<u4"),
        ("width", "<u4"),
        ("height", "<u4"),
        ("pixel_type", "<u4"),
        ("wait_mode", "<u4"),
        ("fifo_priority", "<i4"),
        ("spin_limit", "<u4"),
        ("pool_bytes", "<u8"),
        ("iterations", "<u8"),
        ("seed", "<u8"),
        ("tsc_hz", "<u8"),
        ("period_tsc", "<u8"),
        ("hang_tsc", "<u8"),
        ("cpu_mask", "<u8", (CPU_WORDS,)),
        ("reserved", "<u8", (3,)),
    ]
)
PLAN_SUBBOX = np.dtype(
    [
        ("kernel", "<u4"),
        ("n_in", "<u4"),
        ("n_out", "<u4"),
        ("row0", "<u4"),
        ("row1", "<u4"),
        ("sink", "<u4"),
        ("n_params", "<u4"),
        ("n_consts", "<u4"),
        ("consts_off", "<u4"),
        ("lib_off", "<u4"),
        ("sym_off", "<u4"),
        ("reserved", "<u4"),
        ("in_buf", "<u4", (MAX_PORTS,)),
        ("out_buf", "<u4", (MAX_PORTS,)),
        ("in_row0", "<u4", (MAX_PORTS,)),
        ("in_row1", "<u4", (MAX_PORTS,)),
        ("in_off", "<u8", (MAX_PORTS,)),
        ("out_off", "<u8", (MAX_PORTS,)),
        ("params", "<i8", (MAX_PARAMS,)),
        ("fparams", "<f8", (2,)),
    ]
)
PLAN_OP = np.dtype([("kind", "<u4"), ("arg", "<u4")])
PLAN_THREAD = np.dtype([("first_op", "<u4"), ("n_ops", "<u4"), ("cpu", "<i4"), ("reserved", "<u4")])
PLAN_SIGNAL = np.dtype([("tokens", "<u4"), ("reserved", "<u4")])

RESULT_HEADER = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("header_size", "<u4"),
        ("iter_size", "<u4"),
        ("timer_size", "<u4"),
        ("flags", "<u4"),
        ("n_subboxes", "<u4"),
        ("n_sinks", "<u4"),
        ("n_threads", "<u4"),
        ("tsc_hz", "<u8"),
        ("t0_tsc", "<u8"),
        ("iterations_requested", "<u8"),
        ("iterations_done", "<u8"),
        ("guard_violations", "<u8"),
        ("reserved", "<u8", (2,)),
    ]
)
RESULT_ITER = np.dtype([("release_tsc", "<u8"), ("start_tsc", "<u8"), ("end_tsc", "<u8")])
RESULT_TIMER = np.dtype([("start_tsc", "<u8"), ("end_tsc", "<u8")])
HEARTBEAT_ENTRY = np.dtype([("iteration", "<u8"), ("latency_tsc", "<u8")])
HEARTBEAT = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("header_size", "<u4"),
        ("tsc_hz", "<u8"),
        ("t0_tsc", "<u8"),
        ("iterations", "<u8"),
        ("done", "<u8"),
        ("ring_size", "<u8"),
        ("reserved", "<u8", (2,)),
        ("ring", HEARTBEAT_ENTRY, (HEARTBEAT_RING,)),
    ]
)
KERNEL_CALL = np.dtype(
    [
        ("abi", "<u4"),
        ("pixel_type", "<u4"),
        ("width", "<u4"),
        ("height", "<u4"),
        ("row0", "<u4"),
        ("row1", "<u4"),
        ("n_in", "<u4"),
        ("n_out", "<u4"),
        ("in", "<u8"),
        ("out", "<u8"),
        ("params", "<u8"),
        ("n_params", "<u4"),
        ("reserved", "<u4"),
        ("iteration", "<u8"),
    ]
)

# The C struct names, for the layout comparison.
STRUCTS: dict[str, np.dtype] = {
    "js_plan_header": PLAN_HEADER,
    "js_plan_subbox": PLAN_SUBBOX,
    "js_plan_op": PLAN_OP,
    "js_plan_thread": PLAN_THREAD,
    "js_plan_signal": PLAN_SIGNAL,
    "js_result_header": RESULT_HEADER,
    "js_result_iter": RESULT_ITER,
    "js_result_timer": RESULT_TIMER,
    "js_heartbeat": HEARTBEAT,
    "js_kernel_call": KERNEL_CALL,
}
