"""A pipeline's late iterations attributed by the streaming analysis (pipeline/late.py, measure/stream.py)
against the whole trace attributed at once (what late.py did before: parse_trace, source_table, attribute).

A pipeline's iterations are in flight together, so their windows overlap on a CPU (unlike measure's
detours), and they need not start in order; the hand-built storm of tests/unit/test_stream_analysis.py has
thread slices, interrupts, softirqs and the tool's own thread inside them.  The rows (iteration, cpu, source,
ns) must be the same, whether the CPUs are analysed in one process or two, and in chunks of any size.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from jitterscope.measure import stream
from jitterscope.pipeline import late
from jitterscope.tracing.parse import parse_trace
from tests.support import synth as S
from tests.support import whole_trace as W

from .test_stream_analysis import OWN, SYMBOLS, T0, US, storm

pytestmark = S.needs_parser()

CPUS = (1, 3)


def iterations(span: tuple[int, int], seed: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Windows of 25 us every 10 us (three in flight at once), a few of 600 us, slightly out of start order."""
    lo, hi = span[0] - T0, span[1] - T0
    start = np.arange(lo + 2_000, hi - 700 * US, 10 * US, dtype=np.int64)
    dur = np.full(len(start), 25 * US, np.int64)
    dur[::97] = 600 * US
    rng = np.random.default_rng(seed)
    swap = rng.choice(len(start) - 1, size=len(start) // 20, replace=False)
    start[swap], start[swap + 1] = start[swap + 1].copy(), start[swap].copy()
    return start, start + dur


def reference(trace: Path, start: np.ndarray, end: np.ndarray, cpus: tuple[int, ...], own: set[int]) -> pa.Table:
    """late.attribute_iterations as it was: the whole trace in memory (tests/support/whole_trace.py), every
    window attributed at once, the pipeline's own threads and idle dropped."""
    n = len(start)
    win_cpu = np.repeat(np.asarray(cpus, np.int32), n)
    win_it = np.tile(np.arange(n, dtype=np.int64), len(cpus))
    det = (win_cpu, np.tile(start, len(cpus)), np.tile(end - start, len(cpus)))
    att = W.whole(trace, det, {}, own, {}, T0, 1e9).attribution
    keep = np.array([i != 0 and not nm.startswith(late.OWN_OR_IDLE) for i, (_, nm) in enumerate(att.sources)], bool)
    sel = keep[att.source]
    return pa.table(
        {
            "iteration": win_it[att.detour[sel]],
            "cpu": win_cpu[att.detour[sel]],
            "kind": [att.sources[s][0] for s in att.source[sel].tolist()],
            "name": [att.sources[s][1] for s in att.source[sel].tolist()],
            "ns": att.ns[sel],
        }
    )


def rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*(t.column(c).to_pylist() for c in ("iteration", "cpu", "kind", "name", "ns"))))


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("late")
    pages = {c: S.paginate(storm(3000, c)) for c in CPUS}
    pages[3][9].missed = 7  # the kernel overwrote events of CPU 3 there: counted as lost, as before
    S.write_trace(d / "trace", pages, symbols=SYMBOLS)
    span = (T0, T0 + 3000 * 3 * US + 100)
    start, end = iterations(span)
    return d / "trace", start, end, reference(d / "trace", start, end, CPUS, OWN)


@pytest.mark.parametrize("chunk,jobs", [(50, 1), (1 << 20, 1), (50, 2)])
def test_overlapping_iterations_are_attributed_as_by_the_whole_trace(
    traced, chunk: int, jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace, start, end, want = traced
    monkeypatch.setattr(stream, "CHUNK_ROWS", chunk)
    monkeypatch.setattr(stream, "default_jobs", lambda probed=None: jobs)
    assert threading.active_count() == 1  # else stream.run_jobs analyses in this process, whatever `jobs`
    got, lost = late.attribute_iterations(trace, T0, 1e9, start, end, list(CPUS), OWN)
    # the case is what streaming could break: windows in flight together, each over many segments
    assert (start[1:] < end[:-1]).mean() > 0.9 and (np.diff(start) < 0).any()
    assert np.bincount(want.column("iteration").to_numpy()).max() >= 6
    assert {"irq", "softirq", "thread"} <= set(want.column("kind").to_pylist())
    assert any(n.endswith(" (jitterscope)") for n in want.column("name").to_pylist())  # our thread, named apart
    assert rows(got) == rows(want)
    assert lost == parse_trace(trace).lost_events == 7
