"""Subframes (spec A.4; seed: the shared-memory jitter paper, sec. 3.1 and 5): per-thread slices of
fixed time, the unit in which the paper reads its jitter counters and runs its DVFS controller.

[impl] choices (spec A.4 and its ambiguity A.14 #3), each an option:

* a subframe is `length` of wall time (default 330 us, the paper's evaluation value) of one thread,
  the real-time reading of the spec (a timer tick per thread), not a fixed amount of work;
* subframes start at the thread's start and a deadline is forced at every create the thread makes
  and every join it returns from (the paper forces them at create and join): the current subframe
  ends there, shorter, and the next one starts;
* the first `warmup` subframes of each thread (default 90, the paper's) are kept but marked, and
  left out of the summary's statistics;
* a subframe's jitter is that of the thread's own intervals (every type but `hd`, which re-counts a
  wait from the holder's side), pro rata where an interval straddles subframes.

`whatif dvfs` (issue 16) reads the `subframes` table: per thread and subframe, the time and the
jitter a controller at the end of that subframe would see.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
from typing_extensions import TypedDict  # pydantic validates it (sync/summary.py)

from jitterscope.measure.attribution import overlaps
from jitterscope.rundir import rows_table
from jitterscope.sync.model import TYPES, IntervalColumns, as_columns, rows_by
from jitterscope.sync.rows import Interval, Subframe, Thread
from jitterscope.sync.schema import SUBFRAMES

DEFAULT_LENGTH_NS = 330_000
DEFAULT_WARMUP = 90
MAX_SUBFRAMES = 5_000_000  # a table, not a time series of a day-long run: longer runs are cut


def _edges(start: int, end: int, length: int, forced: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of one thread's subframes: every `length` from its start, restarted at each forced
    deadline."""
    cuts = sorted({t for t in forced if start < t < end})
    a = np.array([start, *cuts], np.int64)
    b = np.array([*cuts, end], np.int64)
    starts = [np.arange(x, y, length, dtype=np.int64) for x, y in zip(a.tolist(), b.tolist())]
    ends = [np.minimum(s + length, y) for s, y in zip(starts, b.tolist())]
    return np.concatenate(starts), np.concatenate(ends)


def bounds(start: int, end: int, length: int, forced: list[int]) -> list[tuple[int, int]]:
    """Subframes [a, b) of one thread's life: every `length` from its start, restarted at each forced deadline."""
    a, b = _edges(start, end, length, forced)
    return list(zip(a.tolist(), b.tolist()))


def table(
    threads: list[Thread],
    intervals: list[Interval] | IntervalColumns,
    length: int = DEFAULT_LENGTH_NS,
    warmup: int = DEFAULT_WARMUP,
) -> pa.Table:
    """The subframes table (schema.SUBFRAMES): one row per (thread, subframe): tid, index, start_ns, end_ns,
    jitter_ns, warmup, forced (ended at a create/join deadline rather than by its length).  Built as
    columns: a long run has hundreds of thousands of subframes."""
    forced: dict[int, list[int]] = defaultdict(list)
    for t in threads:
        if t["creator_tid"] and t["create_ns"] is not None:
            forced[t["creator_tid"]].append(int(t["create_ns"]))
        if t["joined_by"] and t["join_ns"] is not None:
            forced[t["joined_by"]].append(int(t["join_ns"]))
    c = as_columns(intervals)
    mine = np.flatnonzero((c.jitter > 0) & (c.type != TYPES.index("hd")))
    # each thread's own intervals with jitter, (start, end, jitter) rows in order
    own = {tid: np.column_stack([c.start[k], c.end[k], c.jitter[k]]) for tid, k in rows_by(c.tid, mine).items()}
    out: dict[str, list[np.ndarray]] = defaultdict(list)
    n = 0
    for t in threads:
        if t["start_ns"] is None or t["end_ns"] is None or n >= MAX_SUBFRAMES:
            continue
        a, b = _edges(int(t["start_ns"]), int(t["end_ns"]), length, forced.get(t["tid"], []))
        k = np.arange(len(a), dtype=np.int64)
        out["pid"].append(np.full(len(a), t["pid"], np.int64))
        out["tid"].append(np.full(len(a), t["tid"], np.int64))
        out["subframe"].append(k)
        out["start_ns"].append(a)
        out["end_ns"].append(b)
        out["jitter_ns"].append(np.round(_booked(a, b, own.get(t["tid"], []))).astype(np.int64))
        out["warmup"].append(k < warmup)
        out["forced"].append(np.isin(b, np.array(sorted(set(forced.get(t["tid"], []))), np.int64)))
        n += len(a)
    return pa.Table.from_arrays(
        [pa.array(np.concatenate(out[f.name])[:MAX_SUBFRAMES] if out[f.name] else [], type=f.type) for f in SUBFRAMES],
        schema=SUBFRAMES,
    )


def subframes(
    threads: list[Thread],
    intervals: list[Interval],
    length: int = DEFAULT_LENGTH_NS,
    warmup: int = DEFAULT_WARMUP,
) -> list[Subframe]:
    """`table` as rows."""
    rows: list[Subframe] = table(threads, intervals, length, warmup).to_pylist()
    return rows


def _booked(a: np.ndarray, b: np.ndarray, own: list[tuple[int, int, int]] | np.ndarray) -> np.ndarray:
    """Jitter of each subframe [a, b) (contiguous, in order): every interval's jitter spread evenly over its span
    (a point interval goes whole to the subframe holding its end).  Summed in the intervals' order."""
    out = np.zeros(len(a))
    if not len(a) or not len(own):
        return out
    o = np.array(own, np.int64).reshape(-1, 3)
    s, e, j = o[:, 0], o[:, 1], o[:, 2]
    point = np.flatnonzero(e <= s)
    kp = np.searchsorted(a, e[point], side="right") - 1
    point, kp = point[kp >= 0], kp[kp >= 0]
    span = np.flatnonzero(e > s)
    i, k, ov, _ = overlaps(s[span], e[span], a, b)
    i = span[i]
    src = np.concatenate([point, i])
    order = np.argsort(src, kind="stable")
    val = np.concatenate([j[point].astype(np.float64), j[i] * ov / (e[i] - s[i])])
    np.add.at(out, np.concatenate([kp, k])[order], val[order])
    return out


class Stats(TypedDict):
    """summary.json "subframes"."""

    length_ns: int
    warmup: int
    count: int
    measured: int
    with_jitter: int
    forced: int
    jitter_p50_ns: float
    jitter_p99_ns: float
    jitter_max_ns: int
    jitter_ns: int


def summary(rows: list[Subframe] | pa.Table, length: int, warmup: int) -> Stats:
    """Statistics of the measured (after warm-up) subframes: how many, how many had jitter, per-subframe
    jitter distribution."""
    t = rows if isinstance(rows, pa.Table) else rows_table(rows, SUBFRAMES)
    warm = t.column("warmup").to_numpy(zero_copy_only=False).astype(bool)
    j = t.column("jitter_ns").to_numpy()[~warm].astype(np.int64)
    return {
        "length_ns": length,
        "warmup": warmup,
        "count": t.num_rows,
        "measured": len(j),
        "with_jitter": int((j > 0).sum()),
        "forced": int(t.column("forced").to_numpy(zero_copy_only=False).sum()),
        "jitter_p50_ns": float(np.percentile(j, 50)) if len(j) else 0.0,
        "jitter_p99_ns": float(np.percentile(j, 99)) if len(j) else 0.0,
        "jitter_max_ns": int(j.max()) if len(j) else 0,
        "jitter_ns": int(j.sum()),
    }
