"""Box weights "measured in isolation" (spec 003 section 3.3, step 1): `compile --weights measured`.

Every box runs whole, one at a time, on one thread (the single-threaded
reference schedule) for a few iterations with per-sub-box timers; a box's
weight is the median of its durations in ns.  The schedule then follows this
machine's real costs instead of the timing annotations or the cost model, at
the price of determinism: two measurements differ a little, and so may the
schedules (the default, `--weights graph`, is deterministic).
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from jitterscope.measure.tsc import to_ns, tsc_hz
from jitterscope.pipeline.compiler import compile_graph
from jitterscope.pipeline.graph import Graph
from jitterscope.pipeline.plan import RunOptions, build_plan
from jitterscope.pipeline.runtime import Runtime, read_result

ITERATIONS = 15


def measure_weights(g: Graph, cpu: int, iterations: int = ITERATIONS) -> dict[str, float]:
    """Median ns per box, measured single-threaded on `cpu`."""
    sched = compile_graph(g, threads=1, split=1, heuristic="fixed", memory="simple")
    hz = tsc_hz()
    with tempfile.TemporaryDirectory(prefix="jitterscope-weights-") as tmp:
        d = Path(tmp)
        (d / "plan.bin").write_bytes(
            build_plan(sched, RunOptions(iterations=iterations, cpus=(cpu,), wait="spin", timers=True), hz)
        )
        with Runtime(d / "plan.bin", d / "result.bin") as rt:
            pass
        rt.wait()
        timers = read_result(d / "result.bin").timers
    assert timers is not None
    dur = to_ns(timers["end_tsc"].astype(np.int64) - timers["start_tsc"].astype(np.int64), hz)
    return {x.box: max(1.0, float(np.median(dur[:, x.index]))) for x in sched.inst.subboxes}


def with_weights(g: Graph, weights: dict[str, float]) -> Graph:
    """The graph with these box weights (the structure, hence the digest, is unchanged)."""
    boxes = [replace(b, weight=weights.get(b.name, b.weight)) for b in g.boxes]
    return replace(g, boxes=boxes, weighted=True)
