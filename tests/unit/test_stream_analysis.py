"""The streaming analysis (measure/stream.py) against the whole-trace analysis, on hand-built traces.

A storm of context switches with timer ticks, softirqs, work items and hrtimer callbacks
inside them, on two CPUs; detours of 3 us every 10 us and a few long ones spanning many
segments.  Cut into chunks of a few records, every detour and annotation straddles chunk
boundaries: the tables, attribution, event counts and functions must equal those of the
whole trace analysed at once (what build_run did before streaming), also with the CPUs in
two processes.  Memory: the streaming path's peak (tracemalloc) must not grow with the
trace's length while the whole-trace path's, measured side by side, does.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from jitterscope.measure import build, stream
from tests.support import synth as S
from tests.support import whole_trace as W

pytestmark = S.needs_parser()

T0 = 1_000_000_000
US = 1_000
FN_WORK, FN_TICK = 0xFFFFFFFF81000100, 0xFFFFFFFF81000200
SYMBOLS = {FN_WORK: "flush_to_ldisc", FN_TICK: "tick_nohz_handler"}
OWN = {300}  # "our" Python thread: its slices are named apart
PROBE_TIDS = {50: 1}  # the probe thread of CPU 1 (pid 50), switched in under the binary's comm


def storm(cycles: int, cpu: int) -> list[tuple[int, bytes]]:
    """Two tasks ping-ponging, a tick with a softirq every 25 cycles, a work item and an
    hrtimer callback in some, our own thread and the probe thread switched in now and then."""
    ev: list[tuple[int, bytes]] = []
    t = T0 + 100
    tasks = [("python", 100 + cpu), ("python", 200 + cpu), ("jitterscope", 300), ("jitterscope-pro", 50)]
    prev = tasks[0]
    for k in range(cycles):
        nxt = tasks[3] if k % 97 == 5 else tasks[2] if k % 41 == 7 else tasks[1 - (k % 2)]
        if nxt == prev:
            nxt = tasks[k % 2]
        ev.append((t, S.switch(*prev, *nxt)))
        pid = nxt[1]
        if k % 25 == 3:
            ev += [(t + 300, S.local_timer_entry(pid)), (t + 900, S.local_timer_exit(pid))]
            ev += [(t + 950, S.softirq_entry(1, pid)), (t + 1400, S.softirq_exit(1, pid))]
        if k % 60 == 11:
            ev += [(t + 1500, S.work_start(0xAB, FN_WORK, pid)), (t + 2600, S.work_end(0xAB, FN_WORK, pid))]
        if k % 45 == 9:
            ev += [(t + 400, S.hrtimer_entry(0xCD, FN_TICK, pid)), (t + 800, S.hrtimer_exit(0xCD, pid))]
        if k % 33 == 20:
            ev += [(t + 2000, S.irq_entry(11, "virtio0", pid)), (t + 2400, S.irq_exit(11, pid))]
        prev = nxt
        t += 3 * US
    return sorted(ev, key=lambda e: e[0])


def write(trace: Path, cycles: int, cpus: tuple[int, ...] = (1,)) -> tuple[int, int]:
    S.write_trace(trace, {c: S.paginate(storm(cycles, c)) for c in cpus}, symbols=SYMBOLS)
    return T0, T0 + cycles * 3 * US + 100


def detours(cpus: tuple[int, ...], span: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """3 us every 10 us and one 400 us detour every 2 ms, per CPU (ns since T0), sorted by cpu, start."""
    lo, hi = span[0] - T0, span[1] - T0
    starts = np.arange(lo + 1_000, hi - 500 * US, 10 * US, dtype=np.int64)
    dur = np.full(len(starts), 3 * US, np.int64)
    long = (starts % (2000 * US)) < 10 * US
    dur[long] = 400 * US
    keep = np.ones(len(starts), bool)  # a long detour swallows the short ones it overlaps
    for i in np.flatnonzero(long):
        keep[(starts > starts[i]) & (starts < starts[i] + dur[i])] = False
    starts, dur = starts[keep], dur[keep]
    cpu = np.concatenate([np.full(len(starts), c, np.int32) for c in cpus])
    return cpu, np.tile(starts, len(cpus)), np.tile(dur, len(cpus))


def windows(cpus: tuple[int, ...], span: tuple[int, int]) -> dict[int, tuple[float, float]]:
    return {c: (float(50 * US), float(span[1] - T0 - 200 * US)) for c in cpus}


def whole(trace: Path, det, wins) -> W.Analysis:
    """The analysis of the whole trace at once: what build_run did before streaming."""
    return W.whole(trace, det, wins, OWN, PROBE_TIDS, T0, 1e9)


def streamed(run: Path, trace: Path, det, wins, jobs: int = 1) -> tuple[W.Analysis, build.TracedRun]:
    run.mkdir(exist_ok=True)
    t = build.analyse_trace(run / "activity.parquet", trace, *det, wins, OWN, PROBE_TIDS, T0, 1e9, jobs)
    container, inside, names = t.merged.functions_in
    functions = build._functions(container, inside, names) if len(container) else {}
    got = W.Analysis(pq.read_table(run / "activity.parquet"), t.merged.attribution, t.merged.events, functions)
    return got, t


@pytest.fixture(scope="module")
def two_cpu_trace(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("stream")
    cpus = (1, 3)
    span = write(d / "trace", 3000, cpus)
    det, wins = detours(cpus, span), windows(cpus, span)
    return d, det, wins, whole(d / "trace", det, wins)


@pytest.mark.parametrize("chunk", [50, 1 << 20])
def test_chunks_of_any_size_give_the_whole_traces_analysis(
    two_cpu_trace, chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d, det, wins, reference = two_cpu_trace
    monkeypatch.setattr(stream, "CHUNK_ROWS", chunk)
    got, _ = streamed(tmp_path / "run", d / "trace", det, wins)
    att = got.attribution
    # the trace exercises what chunking could break: detours over many segments, functions, our threads
    assert (np.bincount(att.detour) >= 3).any()
    assert got.functions and any(n.endswith(" (jitterscope)") for _, n in att.sources)
    assert ("thread", "js-probe/1") not in att.sources  # the probe's own thread is unexplained time
    W.assert_same(reference, got)


def test_a_detour_straddling_a_chunk_boundary_keeps_its_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One long detour across every chunk boundary of a tiny chunk size: one row per source, summed."""
    span = write(tmp_path / "trace", 200)
    det = (np.array([1], np.int32), np.array([10 * US], np.int64), np.array([500 * US], np.int64))
    wins = windows((1,), span)
    monkeypatch.setattr(stream, "CHUNK_ROWS", 5)
    got, _ = streamed(tmp_path / "run", tmp_path / "trace", det, wins)
    att = got.attribution
    assert len(np.unique(att.source)) == len(att.source)  # pieces of one source summed into one row
    assert int(att.ns.sum()) == 500 * US
    W.assert_same(whole(tmp_path / "trace", det, wins), got)


def test_cpus_in_two_processes_write_what_one_writes(two_cpu_trace, tmp_path: Path) -> None:
    d, det, wins, _ = two_cpu_trace
    one, t1 = streamed(tmp_path / "one", d / "trace", det, wins, jobs=1)
    two, t2 = streamed(tmp_path / "two", d / "trace", det, wins, jobs=2)
    W.assert_same(one, two)
    assert t1.n_events == t2.n_events > 0
    assert (tmp_path / "one" / "activity.parquet").read_bytes() == (tmp_path / "two" / "activity.parquet").read_bytes()


def _peak(fn, *args) -> int:
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_traces_length(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Peak Python memory of 1x and 4x the trace, side by side with the whole-trace path's."""
    monkeypatch.setattr(stream, "CHUNK_ROWS", 500)
    peaks = {}
    for n in (1, 4):
        d = tmp_path / f"x{n}"
        span = write(d / "trace", 3000 * n)
        det, wins = detours((1,), span), windows((1,), span)
        # detours are the run's own input and grow with it: keep their number fixed
        det = tuple(a[:200] for a in det)
        peaks[n] = (
            _peak(streamed, d / "run", d / "trace", det, wins),
            _peak(whole, d / "trace", det, wins),
        )
    (s1, w1), (s4, w4) = peaks[1], peaks[4]
    assert w4 > 2.5 * w1, f"the whole-trace path should grow with length ({w1} → {w4} B): the check is blind"
    assert s4 < 1.3 * s1, f"streaming peak grew with the trace's length: {s1} → {s4} B"


def test_cpus_scanned_in_parallel_count_what_one_scan_counts(two_cpu_trace, tmp_path: Path) -> None:
    from jitterscope.tracing.parse import scan

    d, _, _, _ = two_cpu_trace
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one, two = scan(d / "trace", tmp_path / "one", 1), scan(d / "trace", tmp_path / "two", 2)
    assert sorted(one.pop("addresses")) == sorted(two.pop("addresses")) != []
    assert one == two
    assert list(two["cpus"]) == ["1", "3"]


def _streamed_hz(run: Path, trace: Path, det, wins, hz: float, jobs: int = 1) -> W.Analysis:
    run.mkdir(exist_ok=True)
    t = build.analyse_trace(run / "activity.parquet", trace, *det, wins, OWN, PROBE_TIDS, T0, hz, jobs)
    container, inside, names = t.merged.functions_in
    functions = build._functions(container, inside, names) if len(container) else {}
    return W.Analysis(pq.read_table(run / "activity.parquet"), t.merged.attribution, t.merged.events, functions)


@pytest.mark.parametrize("hz", [1e9, 2_394_567_891.37, 3e8])
def test_lost_pages_clipped_starts_and_any_clock_rate_give_the_whole_traces_analysis(
    tmp_path: Path, hz: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages lost mid-trace (a stored count, a flag alone, pages missing) close and reopen the CPU's spans
    with clipped starts; the detours' overlaps, put in ns by the parser at a clock rate whose products
    round both ways, are the ones numpy finds on the whole trace."""
    cycles = 3000
    pages = S.paginate(storm(cycles, 1))
    assert len(pages) > 12
    pages[4].missed = 17
    pages[8].missed = -1
    del pages[10:12]  # gone, the next page says so
    pages[10].missed = 40
    S.write_trace(tmp_path / "trace", {1: pages}, symbols=SYMBOLS, tsc_hz=hz)
    span_ns = int(cycles * 3 * US * 1e9 / hz)
    rng = np.random.default_rng(7)
    starts = np.sort(rng.choice(np.arange(0, span_ns, 7), 400, replace=False)).astype(np.int64)
    dur = np.minimum(rng.integers(1, 40 * US, len(starts)), np.diff(np.append(starts, span_ns + 1)))
    det = (np.full(len(starts), 1, np.int32), starts, dur.astype(np.int64))
    wins = {1: (float(50 * US), float(span_ns - 200 * US))}
    monkeypatch.setattr(stream, "CHUNK_ROWS", 64)
    got = _streamed_hz(tmp_path / "run", tmp_path / "trace", det, wins, hz)
    flags = pq.read_table(tmp_path / "run" / "activity.parquet")
    assert flags.num_rows > cycles
    reference = W.whole(tmp_path / "trace", det, wins, OWN, PROBE_TIDS, T0, hz)
    W.assert_same(reference, got)
    assert len(got.attribution.detour) > len(starts)


def test_a_detour_over_many_owners_is_summed_in_several_parts(tmp_path: Path) -> None:
    """More distinct threads in one detour than the parser sums apart at once (64): its sums come in
    several parts and are summed again, per source."""
    ev = []
    t = T0 + 100
    prev = ("python", 100)
    for k in range(400):
        nxt = (f"worker{k % 150}", 1000 + k % 150)
        ev.append((t, S.switch(*prev, *nxt)))
        prev = nxt
        t += 2 * US
    S.write_trace(tmp_path / "trace", {1: S.paginate(ev)}, symbols=SYMBOLS)
    det = (np.array([1, 1], np.int32), np.array([1 * US, 700 * US], np.int64), np.array([600 * US, 90 * US], np.int64))
    wins = {1: (0.0, float(t - T0))}
    got, _ = streamed(tmp_path / "run", tmp_path / "trace", det, wins)
    assert len(got.attribution.detour) > 2 * 64
    W.assert_same(whole(tmp_path / "trace", det, wins), got)


@pytest.mark.parametrize("jobs", [2, 3])
def test_three_cpus_shared_between_this_process_and_workers_write_what_one_writes(tmp_path: Path, jobs: int) -> None:
    """With two processes this one analyses CPUs 0 and 2 and a worker CPU 1 (three: one each); the parts
    are joined in CPU order whoever finished first."""
    cpus = (0, 2, 5)
    span = write(tmp_path / "trace", 600, cpus)
    det, wins = detours(cpus, span), windows(cpus, span)
    one, t1 = streamed(tmp_path / "one", tmp_path / "trace", det, wins, jobs=1)
    many, t2 = streamed(tmp_path / "many", tmp_path / "trace", det, wins, jobs=jobs)
    W.assert_same(one, many)
    assert sorted(t2.merged.counts["cpus"]) == ["0", "2", "5"] and t1.n_events == t2.n_events
    assert (tmp_path / "one" / "activity.parquet").read_bytes() == (tmp_path / "many" / "activity.parquet").read_bytes()
