"""The reference analysis of a trace: the whole capture parsed and attributed at once.

What build_run did before the analysis streamed (measure/stream.py): one parse of every CPU,
the activity table in memory, sources from `source_table`, detours from `attribute`.  Tests
hold the streaming path to it, on hand-built traces and on real captures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jitterscope.measure import build
from jitterscope.measure.attribution import Attribution, attribute, attribute_annotations, source_table
from jitterscope.measure.events import SourceEvents, count_events
from jitterscope.measure.tsc import since_ns
from jitterscope.tracing.parse import parse_trace

Detours = tuple[np.ndarray, np.ndarray, np.ndarray]  # cpu, start_ns, duration_ns (sorted by cpu, start)


@dataclass
class Analysis:
    table: pa.Table  # the activity table, strings as strings
    attribution: Attribution
    events: SourceEvents | None
    functions: dict[int, list[str]]


def whole(
    trace: Path,
    det: Detours,
    wins: dict[int, tuple[float, float]],
    own: set[int],
    probe_tids: dict[int, int],
    t0: int,
    hz: float,
) -> Analysis:
    """The analysis of the whole trace at once."""
    det_cpu, det_start, det_dur = det
    td = parse_trace(trace)
    act = td.activity
    a_cpu = act.column("cpu").to_numpy().astype(np.int32)
    a_start = since_ns(act.column("start_tsc").to_numpy(), t0, hz)
    a_end = since_ns(act.column("end_tsc").to_numpy(), t0, hz)
    kinds = act.column("kind").combine_chunks()
    names = build.mark_own_threads(
        act.column("name").combine_chunks(), kinds, act.column("pid").to_numpy(), own, probe_tids
    )
    sources, codes = source_table(kinds, names)
    seg = td.segments
    seg_cpu = np.asarray(seg["cpu"]).astype(np.int32)
    seg_start, seg_end = since_ns(np.asarray(seg["start_tsc"]), t0, hz), since_ns(np.asarray(seg["end_tsc"]), t0, hz)
    seg_src = codes[np.asarray(seg["owner"]).astype(np.int64)]
    att = attribute(det_cpu, det_start, det_dur, seg_cpu, seg_start, seg_end, seg_src, sources)
    events = count_events(
        codes,
        kinds.to_numpy(zero_copy_only=False),
        a_cpu,
        a_start,
        act.column("entered").to_numpy(zero_copy_only=False),
        wins,
        len(sources),
    )
    ann = np.flatnonzero(pc.is_in(kinds, pa.array(build.ANNOTATION_KINDS)).to_numpy(zero_copy_only=False))
    container, inside = attribute_annotations(
        a_cpu[ann], a_start[ann], a_end[ann], det_cpu, det_start, det_dur, seg_cpu, seg_start, seg_end, seg_src
    )
    functions = build._functions(container, inside, names.take(pa.array(ann)).to_pylist())
    table = pa.table(
        {
            "cpu": a_cpu,
            "start_ns": a_start,
            "end_ns": a_end,
            "kind": kinds,
            "name": names,
            "depth": act.column("depth"),
            "detail": act.column("detail"),
        }
    )
    return Analysis(table, att, events, functions)


def assert_same(a: Analysis, b: Analysis) -> None:
    """Equal tables (b's as read from Parquet), attribution, event counts and functions."""
    from jitterscope.rundir import ACTIVITY_SCHEMA

    assert b.table.schema == ACTIVITY_SCHEMA  # dictionary-coded when written, strings when read
    assert a.table.cast(b.table.schema).equals(b.table)
    assert a.attribution.sources == b.attribution.sources
    for f in ("detour", "source", "ns", "offset_ns"):
        np.testing.assert_array_equal(getattr(a.attribution, f), getattr(b.attribution, f))
    assert (a.events is None) == (b.events is None)
    if a.events is not None and b.events is not None:
        np.testing.assert_array_equal(a.events.counts, b.events.counts)
        assert a.events.cpus == b.events.cpus and a.events.exposure_s == b.events.exposure_s
    assert a.functions == b.functions
