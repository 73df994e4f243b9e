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
from typing_extensions import TypedDict  # pydantic validates it (sync/summary.py)

from jitterscope.sync.rows import Interval, Subframe, Thread

DEFAULT_LENGTH_NS = 330_000
DEFAULT_WARMUP = 90
MAX_SUBFRAMES = 5_000_000  # a table, not a time series of a day-long run: longer runs are cut


def bounds(start: int, end: int, length: int, forced: list[int]) -> list[tuple[int, int]]:
    """Subframes [a, b) of one thread's life: every `length` from its start, restarted at each forced deadline."""
    cuts = sorted({t for t in forced if start < t < end})
    out: list[tuple[int, int]] = []
    for a, b in zip([start, *cuts], [*cuts, end]):
        edges = np.arange(a, b, length, dtype=np.int64)
        out += [(int(x), int(min(x + length, b))) for x in edges]
    return out


def subframes(
    threads: list[Thread],
    intervals: list[Interval],
    length: int = DEFAULT_LENGTH_NS,
    warmup: int = DEFAULT_WARMUP,
) -> list[Subframe]:
    """One row per (thread, subframe): tid, index, start_ns, end_ns, jitter_ns, warmup, forced (ended at a
    create/join deadline rather than by its length)."""
    forced: dict[int, list[int]] = defaultdict(list)
    for t in threads:
        if t["creator_tid"] and t["create_ns"] is not None:
            forced[t["creator_tid"]].append(int(t["create_ns"]))
        if t["joined_by"] and t["join_ns"] is not None:
            forced[t["joined_by"]].append(int(t["join_ns"]))
    own: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for r in intervals:
        if r["jitter_ns"] > 0 and r["type"] != "hd":
            own[r["tid"]].append((int(r["start_ns"]), int(r["end_ns"]), int(r["jitter_ns"])))
    rows: list[Subframe] = []
    for t in threads:
        if t["start_ns"] is None or t["end_ns"] is None or len(rows) >= MAX_SUBFRAMES:
            continue
        bs = bounds(int(t["start_ns"]), int(t["end_ns"]), length, forced.get(t["tid"], []))
        jit = _booked(bs, own.get(t["tid"], []))
        cuts = set(forced.get(t["tid"], []))
        for k, ((a, b), j) in enumerate(zip(bs, jit)):
            rows.append(
                {
                    "pid": t["pid"],
                    "tid": t["tid"],
                    "subframe": k,
                    "start_ns": a,
                    "end_ns": b,
                    "jitter_ns": int(round(j)),
                    "warmup": k < warmup,
                    "forced": b in cuts,
                }
            )
    return rows[:MAX_SUBFRAMES]


def _booked(bs: list[tuple[int, int]], own: list[tuple[int, int, int]]) -> np.ndarray:
    """Jitter of each subframe: every interval's jitter spread evenly over its span (a point interval
    goes whole to the subframe holding its end)."""
    out = np.zeros(len(bs))
    if not bs or not own:
        return out
    starts = np.array([a for a, _ in bs], dtype=np.int64)
    for s, e, j in own:
        if e <= s:
            k = int(np.searchsorted(starts, e, side="right")) - 1
            if k >= 0:
                out[k] += j
            continue
        k0 = max(int(np.searchsorted(starts, s, side="right")) - 1, 0)
        k1 = int(np.searchsorted(starts, e, side="left"))
        for k in range(k0, k1):
            ov = min(e, bs[k][1]) - max(s, bs[k][0])
            if ov > 0:
                out[k] += j * ov / (e - s)
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


def summary(rows: list[Subframe], length: int, warmup: int) -> Stats:
    """Statistics of the measured (after warm-up) subframes: how many, how many had jitter, per-subframe
    jitter distribution."""
    m = [r for r in rows if not r["warmup"]]
    j = np.array([r["jitter_ns"] for r in m], dtype=np.int64)
    return {
        "length_ns": length,
        "warmup": warmup,
        "count": len(rows),
        "measured": len(m),
        "with_jitter": int((j > 0).sum()),
        "forced": sum(1 for r in rows if r["forced"]),
        "jitter_p50_ns": float(np.percentile(j, 50)) if len(j) else 0.0,
        "jitter_p99_ns": float(np.percentile(j, 99)) if len(j) else 0.0,
        "jitter_max_ns": int(j.max()) if len(j) else 0,
        "jitter_ns": int(j.sum()),
    }
