"""Critical-path jitter (spec A.5; the shared-memory jitter paper sec. 4.1.4) and frames (A.4).

Two readings of "the critical path's jitter":

* counter rule (the paper's, default): each thread accumulates its own jitter;
  a created thread starts with its creator's count; a join sets the joiner's
  count to max(joiner, joined); with `merge_at_barrier` ([impl]) every
  participant of a barrier round takes the round's maximum.  The program's
  critical-path jitter is the main thread's count at its end.
* happens-before walk: from the main thread's end, step back through the
  thread's last wait to the thread that released it (at the release), through
  a thread's start to its creator (at the create); the steps partition the run
  time into `run`, `wake` (release -> waiter back) and `create` pieces, and the
  jitter on the path is the jitter booked inside those pieces.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitterscope.sync.model import TYPES, IntervalColumns, as_columns, latest_before, releaser_of, rows_by
from jitterscope.sync.rows import Frame, Interval, Step, Thread, Wait

MAX_STEPS = 1_000_000


@dataclass(frozen=True)
class Counts:
    """The counter rule's result: the root thread's jitter count at its end, and every thread's."""

    jitter_ns: int
    per_thread: dict[int, int]


def barrier_rounds(intervals: list[Interval]) -> list[tuple[int, list[int]]]:
    """(release time, participants) of every complete barrier round."""
    rounds: dict[tuple[int, int, int], set[int]] = defaultdict(set)
    ends: dict[tuple[int, int, int], int] = {}
    for r in intervals:
        if r["type"] == "barw":
            key = (r["pid"], r["obj"], r["start_ns"])
            rounds[key] |= {r["tid"]} | ({r["releaser_tid"]} if r["releaser_tid"] is not None else set())
            ends[key] = max(ends.get(key, r["end_ns"]), r["end_ns"])
    return [(ends[k], sorted(v)) for k, v in rounds.items()]


def counter_rule(
    rows: list[Thread], intervals: list[Interval] | IntervalColumns, root: int, merge_at_barrier: bool = False
) -> Counts:
    """The paper's jitter-count propagation; returns the root thread's count and every thread's."""
    c = as_columns(intervals)
    ops: list[tuple[int, int, str, Any]] = []
    for t in rows:
        if t["creator_tid"]:
            ops.append(
                (
                    t["create_ns"] if t["create_ns"] is not None else t["start_ns"],
                    1,
                    "create",
                    (t["creator_tid"], t["tid"]),
                )
            )
        if t["joined_by"] and t["join_ns"] is not None:
            ops.append((t["join_ns"], 2, "join", (t["joined_by"], t["tid"])))
    if merge_at_barrier:
        for end, tids in barrier_rounds(c.rows(np.flatnonzero(c.type == TYPES.index("barw")))):
            ops.append((end, 2, "merge", tids))
    ops.sort(key=lambda o: (o[0], o[1]))
    # Every interval with jitter adds it to its thread's count at its end, before any create, join or merge at
    # that time or later (their order in the sort above): between two such operations the adds are summed per
    # thread, the threads in the order their first add comes (the order the counts were made in, one by one).
    add = np.flatnonzero(c.jitter > 0)
    order = add[np.argsort(c.end[add], kind="stable")]
    at = np.searchsorted(np.array([o[0] for o in ops], np.int64), c.end[order], side="left")
    cuts = np.searchsorted(at, np.arange(len(ops) + 1), side="left").tolist() + [len(order)]
    count: dict[int, int] = defaultdict(int)
    for k in range(len(ops) + 1):
        seg = order[cuts[k] : cuts[k + 1]]
        if len(seg):
            who, first, where = np.unique(c.tid[seg], return_index=True, return_inverse=True)
            sums = np.zeros(len(who), np.int64)
            np.add.at(sums, where, c.jitter[seg])
            for g in np.argsort(first, kind="stable").tolist():
                count[int(who[g])] += int(sums[g])
        if k == len(ops):
            break
        _, _, op, arg = ops[k]
        if op == "create":
            count[arg[1]] = count[arg[0]] + count.get(arg[1], 0)
        elif op == "join":
            count[arg[0]] = max(count[arg[0]], count[arg[1]])
        else:
            top = max(count[t] for t in arg)
            for t in arg:
                count[t] = top
    return Counts(int(count.get(root, 0)), {int(k): int(v) for k, v in count.items()})


def walk(rows: list[Thread], waits: list[Wait], root: int) -> list[Step]:
    """The happens-before critical path, from the root thread's end back to its start."""
    by_tid = {r["tid"]: r for r in rows}
    per = releaser_of(waits)
    exits = {tid: [w["exit_ns"] for w in ws] for tid, ws in per.items()}
    if root not in by_tid:
        return []
    cur, t = root, int(by_tid[root]["end_ns"])
    steps: list[Step] = []
    for _ in range(MAX_STEPS):
        th = by_tid[cur]
        start = int(th["start_ns"])
        w = latest_before(per.get(cur, []), t, exits.get(cur, []))
        rel, by = (w["release_ns"], w["releaser_tid"]) if w is not None else (None, None)
        if (
            w is not None
            and rel is not None
            and by is not None
            and w["exit_ns"] > start
            and by in by_tid
            and rel >= by_tid[by]["start_ns"]
            and rel < t
        ):
            steps.append({"tid": cur, "kind": "run", "start_ns": w["exit_ns"], "end_ns": t, "wait": -1})
            steps.append({"tid": cur, "kind": "wake", "start_ns": rel, "end_ns": w["exit_ns"], "wait": w["wait"]})
            cur, t = by, int(rel)
            continue
        steps.append({"tid": cur, "kind": "run", "start_ns": start, "end_ns": t, "wait": -1})
        creator = th["creator_tid"]
        if creator in by_tid and th["create_ns"] is not None and th["create_ns"] < start:
            steps.append({"tid": cur, "kind": "create", "start_ns": int(th["create_ns"]), "end_ns": start, "wait": -1})
            cur, t = creator, int(th["create_ns"])
            continue
        break
    steps = [s for s in reversed(steps) if s["end_ns"] > s["start_ns"] or s["kind"] == "wake"]
    for k, s in enumerate(steps):
        s["step"] = k
    return steps


def path_jitter(steps: list[Step], intervals: list[Interval] | IntervalColumns) -> int:
    """Book each step's jitter: a wake step carries its wait's jitter; a run step the
    jitter of its thread's own intervals inside it (pro rata where they straddle it)."""
    c = as_columns(intervals)
    # only the rows the steps need are looked at: the waits of the wake steps (the last row of each wait, hd
    # rows aside) and the threads of the run steps
    woke = np.array([s["wait"] for s in steps if s["kind"] == "wake"], np.int64)
    rows = np.flatnonzero((c.wait >= 0) & (c.type != TYPES.index("hd")) & np.isin(c.wait, woke))
    by_wait = dict(zip(c.wait[rows].tolist(), c.jitter[rows].tolist()))
    ran = np.array([s["tid"] for s in steps if s["kind"] == "run"], np.int64)
    own_rows = np.flatnonzero((c.jitter > 0) & (c.wait < 0) & np.isin(c.tid, ran))
    own = rows_by(c.tid, own_rows)  # each thread's own intervals with jitter, in order
    total = 0
    for s in steps:
        j = 0.0
        if s["kind"] == "wake":
            j = by_wait.get(s["wait"], 0)
        elif s["kind"] == "run" and s["tid"] in own and s["end_ns"] > s["start_ns"]:
            mine = own[s["tid"]]
            rs_start, rs_end = c.start[mine], c.end[mine]
            hit = mine[(rs_end > s["start_ns"]) & (rs_start < s["end_ns"]) & (rs_end > rs_start)]
            # in Python integers: exact products, the same float sum in the same order
            for a, b, jn in zip(c.start[hit].tolist(), c.end[hit].tolist(), c.jitter[hit].tolist()):
                ov = min(b, s["end_ns"]) - max(a, s["start_ns"])
                j += jn * ov / (b - a)
        s["jitter_ns"] = int(round(j))
        total += s["jitter_ns"]
    return total


def frames(
    events_frame_times: np.ndarray,
    frame_ids: np.ndarray,
    run_start: int,
    run_end: int,
    intervals: list[Interval] | IntervalColumns,
    steps: list[Step],
) -> list[Frame]:
    """Frames between consecutive marks (any thread); without marks, the whole run is one frame."""
    order = np.argsort(events_frame_times, kind="stable")
    marks = events_frame_times[order]
    ids = frame_ids[order]
    if len(marks) < 2:
        bounds = [(0, run_start, run_end)]
    else:
        bounds = [(int(ids[k]), int(marks[k]), int(marks[k + 1])) for k in range(len(marks) - 1)]
    c = as_columns(intervals)
    ends, jit = c.end[c.jitter > 0], c.jitter[c.jitter > 0]
    out: list[Frame] = []
    for k, (fid, a, b) in enumerate(bounds):
        sel = (ends > a) & (ends <= b)
        pj = 0.0
        for s in steps:
            ov = min(s["end_ns"], b) - max(s["start_ns"], a)
            span = s["end_ns"] - s["start_ns"]
            if ov > 0 and span > 0:
                pj += s.get("jitter_ns", 0) * ov / span
        out.append(
            {
                "frame": k,
                "id": fid,
                "start_ns": a,
                "end_ns": b,
                "jitter_ns": int(jit[sel].sum()),
                "path_jitter_ns": int(round(pj)),
            }
        )
    return out
