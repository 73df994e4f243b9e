"""The paper's event model: interposer records -> threads, waits and jitter intervals.

Section A.2-A.3 of the spec (the shared-memory jitter paper, "Architectural Support for Handling
Jitter in Shared Memory based Parallel Applications", Table 1, Fig. 6, App.
C.2).  Every wait names the thread that released it:

  lu   lock-unlock      l_x(sleeping acquirer) - u_e(last unlock of that mutex before l_x)
  u    unlock           u_x - u_e (unlocks that had sleepers)
  sw   signal-wait      w_x - s_e (oldest pending signal stamp, FIFO per condvar)
  s    signal           s_x - s_e
  bw   broadcast-wait   w_x - b_e (b_e stamps every waiter registered then)
  b    broadcast        b_x - b_e
  barw barrier-wait     return - arrival of the round's last arriver (glibc's barrier is futex-based)
  bar  barrier          the last arriver's own return - arrival
  jw   join-wait        j_x - the joined thread's exit (an extension: the paper has no join type)
  pw   post-wait        w_x - p_e (the post that woke a sleeping sem_wait, FIFO per semaphore; an extension)
  p    post             p_x - p_e (posts that had sleepers)

An interval T becomes jitter by the threshold rule (A.3.3): N = threshold
(default 10 us), strict T > N; `excess` (default) books T - N, `whole` books
T.  Unmatched waits (spurious wake-ups, timeouts, a signal not seen) are
counted, never guessed.
"""

from __future__ import annotations

import bisect
import errno
from collections import defaultdict
from dataclasses import dataclass, field, fields
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jitterscope.measure.tsc import since_ns
from jitterscope.rundir import rows_table
from jitterscope.sync import records as R
from jitterscope.sync.rows import Interval, Process, Segment, Thread, Wait
from jitterscope.sync.schema import JITTER

MODES = ("excess", "whole")
WAITER_TYPES = ("lu", "sw", "bw", "barw", "jw", "pw")
RELEASER_TYPES = ("u", "s", "b", "bar", "p")
SYNC_TYPES = WAITER_TYPES + RELEASER_TYPES
LOCK_OPS = {R.LOCK: "lock", R.RDLOCK: "rdlock", R.WRLOCK: "wrlock"}
UNLOCK_OF = {R.LOCK: R.UNLOCK, R.RDLOCK: R.RWUNLOCK, R.WRLOCK: R.RWUNLOCK}


@dataclass
class Options:
    """Every [impl]/[D] choice of the spec, with its default (docs/commands/sync.md)."""

    threshold_ns: int = 10_000  # base N = threshold theta (A.3.3)
    mode: str = "excess"  # excess: T - N; whole: T (A.3.3)
    lu_sleep_only: bool = True  # lu only when the acquirer slept (A.3.5 step 3)
    merge_at_barrier: bool = False  # critical-path counters merge at barriers (A.5 [impl])
    subframe_ns: int = 330_000  # subframe length (A.4 [impl]: wall time per thread)
    warmup_subframes: int = 90  # first subframes of each thread not measured (A.4)


def jitter_of(t_ns: np.ndarray | int, threshold_ns: int, mode: str) -> np.ndarray:
    """The threshold rule: T > N counts; excess books T - N, whole books T."""
    t = np.asarray(t_ns, dtype=np.int64)
    over = t > threshold_ns
    return np.where(over, t - threshold_ns if mode == "excess" else t, 0).astype(np.int64)


class _Lists(NamedTuple):
    pid: list[int]
    tid: list[int]
    op: list[int]
    obj: list[int]
    aux: list[int]
    site: list[int]
    enter: list[int]
    exit: list[int]
    cpu: list[int]
    flags: list[int]
    result: list[int]


@dataclass
class Events:
    """All processes' records, ns since t0, sorted by (enter, exit)."""

    pid: np.ndarray
    tid: np.ndarray
    op: np.ndarray
    obj: np.ndarray
    aux: np.ndarray
    site: np.ndarray
    enter: np.ndarray
    exit: np.ndarray
    cpu: np.ndarray
    flags: np.ndarray
    result: np.ndarray
    processes: list[Process] = field(default_factory=list)
    _lists: _Lists | None = field(default=None, repr=False, compare=False)

    def lists(self) -> _Lists:
        """The columns as Python lists, made once: the matching indexes single events in Python loops, where a
        list element costs a tenth of a numpy scalar."""
        if self._lists is None:
            self._lists = _Lists(*(getattr(self, f).tolist() for f in _Lists._fields))
        return self._lists

    def __len__(self) -> int:
        return len(self.enter)


def load_events(logs: list[R.ProcessLog], t0_tsc: int, hz: float) -> Events:
    """Concatenate every process's records and convert TSC to ns since t0."""
    recs = [lg.records for lg in logs]
    pids = [np.full(len(lg.records), lg.pid, np.int32) for lg in logs]
    rec = np.concatenate(recs) if recs else np.zeros(0, R.RECORD_DTYPE)
    pid = np.concatenate(pids) if pids else np.zeros(0, np.int32)

    def ns(tsc: np.ndarray) -> np.ndarray:
        return since_ns(tsc, t0_tsc, hz)

    enter, exit_ = ns(rec["enter_tsc"]), ns(rec["exit_tsc"])
    order = np.lexsort((exit_, enter))
    procs: list[Process] = [
        {
            "pid": lg.pid,
            "ppid": int(lg.header["ppid"]),
            "comm": lg.comm,
            "complete": lg.complete,
            "records": int(len(lg.records)),
            "dropped": int(lg.header["dropped"]),
            "threads": int(lg.header["threads"]),
            "start_ns": int(ns(np.array([lg.header["start_tsc"]]))[0]),
            "end_ns": int(ns(np.array([lg.header["end_tsc"]]))[0]) if lg.complete else None,
            "file": lg.path.name,
        }
        for lg in logs
    ]
    return Events(
        pid[order],
        rec["tid"][order].astype(np.int32),
        rec["type"][order].astype(np.int16),
        rec["obj"][order],
        rec["aux"][order],
        rec["site"][order],
        enter[order],
        exit_[order],
        rec["cpu"][order].astype(np.int32),
        rec["flags"][order].astype(np.int32),
        rec["result"][order],
        procs,
    )


def _comm(obj: int, aux: int) -> str:
    raw = int(obj).to_bytes(8, "little") + int(aux).to_bytes(8, "little")
    return raw.split(b"\0")[0].decode(errors="replace")


def threads(ev: Events, ended: dict[int, int] | None = None) -> list[Thread]:
    """One row per thread: creator, create/start/end times, who joined it when.  `ended`: per process that did not
    end through exit(), when it was seen to end (its threads without an exit record ended then, not at their last
    record)."""
    rows: dict[int, Thread] = {}
    who, where = np.unique(ev.tid, return_inverse=True)
    latest = np.full(len(who), -(1 << 62), np.int64)
    np.maximum.at(latest, where.reshape(-1), ev.exit)
    last: dict[int, int] = dict(zip(who.tolist(), latest.tolist()))  # each thread's last record's exit
    for p in ev.processes:  # the main thread starts with the process
        rows[p["pid"]] = {
            "pid": p["pid"],
            "tid": p["pid"],
            "name": p["comm"],
            "creator_tid": 0,
            "create_ns": None,
            "start_ns": p["start_ns"],
            "end_ns": 0,  # set below
            "joined_by": 0,
            "join_ns": None,
        }
    creates: dict[tuple[int, int], int] = {}  # (pid, seq) -> event index of CREATE
    handles: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)  # (pid, pthread_t) -> [(time, seq)]
    seq_tid: dict[tuple[int, int], int] = {}
    for i in np.flatnonzero(ev.op == R.CREATE).tolist():
        if ev.result[i] == 0:
            creates[(int(ev.pid[i]), int(ev.aux[i]))] = int(i)
            handles[(int(ev.pid[i]), int(ev.obj[i]))].append((int(ev.enter[i]), int(ev.aux[i])))
    for i in np.flatnonzero(ev.op == R.START).tolist():
        pid, tid, seq = int(ev.pid[i]), int(ev.tid[i]), int(ev.aux[i])
        c = creates.get((pid, seq))
        seq_tid[(pid, seq)] = tid
        rows[tid] = {
            "pid": pid,
            "tid": tid,
            "name": "",
            "creator_tid": int(ev.obj[i]),
            "create_ns": int(ev.enter[c]) if c is not None else None,
            "start_ns": int(ev.enter[i]),
            "end_ns": 0,  # set below
            "joined_by": 0,
            "join_ns": None,
        }
    exited: dict[int, int] = {}
    for i in np.flatnonzero(ev.op == R.EXIT).tolist():
        r = rows.get(int(ev.tid[i]))
        if r is not None and r["tid"] not in exited:
            exited[r["tid"]] = int(ev.enter[i])
            r["name"] = _comm(int(ev.obj[i]), int(ev.aux[i])) or r["name"]
    for i in np.flatnonzero(ev.op == R.JOIN).tolist():
        child = join_target(ev, int(i), handles, seq_tid)
        if child is not None and child in rows and ev.result[i] == 0:
            rows[child]["joined_by"] = int(ev.tid[i])
            rows[child]["join_ns"] = int(ev.exit[i])
    for t, r in rows.items():
        if t in exited:
            r["end_ns"] = exited[t]
        else:  # crashed, exec'd or killed: when the tool saw it end, else its last record
            seen = (ended or {}).get(r["pid"])
            r["end_ns"] = max(seen, last.get(t, r["start_ns"])) if seen is not None else last.get(t, r["start_ns"])
    return sorted(rows.values(), key=lambda r: (r["start_ns"], r["tid"]))


def join_target(
    ev: Events, i: int, handles: dict[tuple[int, int], list[tuple[int, int]]], seq_tid: dict[tuple[int, int], int]
) -> int | None:
    """The tid a JOIN waited for: the latest create of that pthread_t before the join (handles are reused)."""
    cands = handles.get((int(ev.pid[i]), int(ev.obj[i])), [])
    best = None
    for t, seq in cands:
        if t <= ev.enter[i]:
            best = seq
    return seq_tid.get((int(ev.pid[i]), best)) if best is not None else None


@dataclass
class Matched:
    waits: list[Wait]
    intervals: list[Interval]  # every T, jitter or not
    unmatched: dict[str, int]


class _Builder:
    def __init__(self, ev: Events, opts: Options) -> None:
        self.ev, self.opts = ev, opts
        self.c = ev.lists()
        self.waits: list[Wait] = []
        self.intervals: list[Interval] = []
        self.unmatched: dict[str, int] = defaultdict(int)

    def wait(
        self, i: int, op: str, release: int | None, releaser: int | None, rel_event: int | None, obj: int | None = None
    ) -> int:
        c = self.c
        self.waits.append(
            {
                "wait": len(self.waits),
                "pid": c.pid[i],
                "tid": c.tid[i],
                "op": op,
                "obj": c.obj[i] if obj is None else obj,
                "enter_ns": c.enter[i],
                "release_ns": release,
                "exit_ns": c.exit[i],
                "releaser_tid": releaser,
                "releaser_event": rel_event,
                "event": int(i),
            }
        )
        return len(self.waits) - 1

    def interval(
        self,
        typ: str,
        i: int,
        start: int,
        end: int,
        wait: int | None,
        releaser: int | None,
        tid: int | None = None,
        obj: int | None = None,
    ) -> None:
        c = self.c
        self.intervals.append(
            {
                "type": typ,
                "pid": c.pid[i],
                "tid": c.tid[i] if tid is None else tid,
                "obj": c.obj[i] if obj is None else obj,
                "start_ns": int(start),
                "end_ns": int(end),
                "t_ns": int(end - start),
                "wait": wait,
                "releaser_tid": releaser,
                "cpu": c.cpu[i],
                "site": c.site[i],
            }
        )


def _by_obj(ev: Events, ops: tuple[int, ...]) -> dict[tuple[int, int], list[int]]:
    out: dict[tuple[int, int], list[int]] = defaultdict(list)
    c = ev.lists()
    for i in np.flatnonzero(np.isin(ev.op, ops)).tolist():
        out[(c.pid[i], c.obj[i])].append(int(i))
    return out


def _locks(b: _Builder) -> None:
    ev = b.ev
    c = b.c
    unlocks = _by_obj(ev, (R.UNLOCK, R.RWUNLOCK))  # indices in enter order (ev is sorted)
    starts = {k: ev.enter[np.array(v)] for k, v in unlocks.items()}
    for i in np.flatnonzero(np.isin(ev.op, list(LOCK_OPS))).tolist():
        if c.result[i] != 0:
            b.unmatched["lock_failed"] += 1
            continue
        key = (c.pid[i], c.obj[i])
        lst = unlocks.get(key, [])
        cand: list[int] = []
        if lst:
            k = int(np.searchsorted(starts[key], c.exit[i], side="right")) - 1
            while k >= 0 and c.enter[lst[k]] >= c.enter[i]:
                j = lst[k]
                if c.op[j] == UNLOCK_OF[c.op[i]] and c.tid[j] != c.tid[i]:
                    cand = [j]
                    break
                k -= 1
        if not cand:
            b.wait(i, LOCK_OPS[c.op[i]], None, None, None)
            b.unmatched["lock_no_unlock"] += 1
            continue
        j = cand[-1]  # modify-timestamp semantics: the last unlock before l_x
        w = b.wait(i, LOCK_OPS[c.op[i]], c.enter[j], c.tid[j], j)
        if b.opts.lu_sleep_only and not c.flags[i] & R.SF_SLEPT:
            b.unmatched["lock_not_slept"] += 1
            continue
        b.interval("lu", i, c.enter[j], c.exit[i], w, c.tid[j])
    for i in np.flatnonzero(np.isin(ev.op, (R.UNLOCK, R.RWUNLOCK))).tolist():
        b.interval("u", int(i), c.enter[i], c.exit[i], None, None)


def _conds(b: _Builder) -> None:
    """Per condvar in time order: waiters register at w_e, a signal claims the oldest
    unclaimed waiter and pushes its s_e onto a FIFO, a broadcast stamps every
    waiter registered then, w_x takes its broadcast stamp or the oldest pending signal."""
    ev = b.ev
    c = b.c
    for _obj, idx in _by_obj(ev, (R.COND_WAIT, R.COND_SIGNAL, R.COND_BROADCAST)).items():
        steps: list[tuple[int, int, int]] = []  # (time, order, event): exits after entries at equal times
        for i in idx:
            if c.op[i] == R.COND_WAIT:
                steps += [(c.enter[i], 0, i), (c.exit[i], 2, i)]
            else:
                steps.append((c.enter[i], 1, i))
        steps.sort()
        registered: dict[int, list[Any]] = {}  # wait event -> [state, stamp, stamp event]
        fifo: list[tuple[int, int]] = []
        for t, kind, i in steps:
            if kind == 0:
                registered[i] = [None, None, None]
            elif kind == 1:
                op = c.op[i]
                b.interval("s" if op == R.COND_SIGNAL else "b", i, c.enter[i], c.exit[i], None, None)
                free = [w for w, st in registered.items() if st[0] is None]
                if not free:
                    b.unmatched["signal_no_waiter"] += 1
                elif op == R.COND_SIGNAL:
                    registered[free[0]][0] = "sig"
                    fifo.append((t, i))
                else:
                    for w in free:
                        registered[w] = ["bc", t, i]
            else:
                st = registered.pop(i, [None, None, None])
                if c.result[i] != 0:
                    # a timer ended it or the thread was cancelled in it, no thread released it: still a wait (the
                    # thread slept), not compute
                    b.wait(i, "cond", None, None, None)
                    b.unmatched["wait_cancelled" if c.result[i] == errno.ECANCELED else "wait_timed_out"] += 1
                    continue
                if st[0] == "bc":
                    j = st[2]
                    w = b.wait(i, "cond", st[1], c.tid[j], j)
                    b.interval("bw", i, st[1], c.exit[i], w, c.tid[j])
                elif fifo and fifo[0][0] <= t:
                    ts, j = fifo.pop(0)
                    w = b.wait(i, "cond", ts, c.tid[j], j)
                    b.interval("sw", i, ts, c.exit[i], w, c.tid[j])
                else:
                    b.wait(i, "cond", None, None, None)
                    b.unmatched["wait_spurious"] += 1


def _sems(b: _Builder) -> None:
    """Per semaphore in time order: a post with sleepers wakes one of them; a contended wait's return takes the
    oldest post made after it began sleeping and before it returned (a post before it slept was the trywait's)."""
    ev = b.ev
    c = b.c
    for _obj, idx in _by_obj(ev, (R.SEM_WAIT, R.SEM_POST)).items():
        posts = [i for i in idx if c.op[i] == R.SEM_POST]  # in enter order (ev is sorted)
        at = [c.enter[i] for i in posts]
        for i in posts:
            b.interval("p", i, c.enter[i], c.exit[i], None, None)
        used: set[int] = set()
        for i in sorted((i for i in idx if c.op[i] == R.SEM_WAIT), key=lambda i: (c.exit[i], i)):
            if c.result[i] != 0:
                b.wait(i, "sem", None, None, None)  # timed out, interrupted or cancelled: released by no thread
                b.unmatched["sem_wait_cancelled" if c.result[i] == errno.ECANCELED else "sem_wait_timed_out"] += 1
                continue
            k = bisect.bisect_left(at, c.enter[i])
            while k < len(posts) and (posts[k] in used or c.tid[posts[k]] == c.tid[i]) and at[k] <= c.exit[i]:
                k += 1
            if k == len(posts) or at[k] > c.exit[i]:
                b.wait(i, "sem", None, None, None)
                b.unmatched["sem_wait_no_post"] += 1
                continue
            j = posts[k]
            used.add(j)
            w = b.wait(i, "sem", c.enter[j], c.tid[j], j)
            b.interval("pw", i, c.enter[j], c.exit[i], w, c.tid[j])


def _spins(b: _Builder) -> None:
    """A contended spin lock: the thread waited (spinning) that long; its releaser is not recorded (records.UNSEEN)."""
    for i in np.flatnonzero(b.ev.op == R.SPIN_LOCK).tolist():
        b.wait(int(i), "spin", None, None, None)
        b.unmatched["spin_no_releaser"] += 1


def _barriers(b: _Builder) -> None:
    """Rounds of `count` arrivals in arrival order (a thread can only arrive for the
    next round after the round's last arriver really arrived, so order keeps rounds)."""
    ev = b.ev
    c = b.c
    counts: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for i in np.flatnonzero(ev.op == R.BARRIER_INIT).tolist():
        counts[(c.pid[i], c.obj[i])].append((c.enter[i], c.aux[i]))
    for key, idx in _by_obj(ev, (R.BARRIER_WAIT,)).items():
        idx = sorted(idx, key=lambda i: (c.enter[i], i))
        inits = counts.get(key) or [(0, len({c.tid[i] for i in idx}))]
        pos = 0
        while pos < len(idx):
            t = c.enter[idx[pos]]
            n = [cnt for ts, cnt in inits if ts <= t][-1] if any(ts <= t for ts, _ in inits) else inits[0][1]
            rnd = idx[pos : pos + max(1, n)]
            pos += max(1, n)
            if len(rnd) < n:
                b.unmatched["barrier_incomplete_round"] += len(rnd)
                break
            last = rnd[-1]
            for i in rnd[:-1]:
                w = b.wait(i, "barrier", c.enter[last], c.tid[last], last)
                b.interval("barw", i, c.enter[last], c.exit[i], w, c.tid[last])
            b.interval("bar", last, c.enter[last], c.exit[last], None, None)


def _joins(b: _Builder, rows: list[Thread]) -> None:
    ev = b.ev
    by_tid = {r["tid"]: r for r in rows}
    handles: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    seq_tid: dict[tuple[int, int], int] = {}
    for i in np.flatnonzero(ev.op == R.CREATE).tolist():
        handles[(int(ev.pid[i]), int(ev.obj[i]))].append((int(ev.enter[i]), int(ev.aux[i])))
    for i in np.flatnonzero(ev.op == R.START).tolist():
        seq_tid[(int(ev.pid[i]), int(ev.aux[i]))] = int(ev.tid[i])
    for i in np.flatnonzero(ev.op == R.JOIN).tolist():
        child = join_target(ev, i, handles, seq_tid)
        if child is None or child not in by_tid or ev.result[i] != 0:
            b.unmatched["join_unknown_thread"] += 1
            continue
        end = by_tid[child]["end_ns"]
        if end is None or end <= ev.enter[i]:
            continue  # the thread had ended: the join did not wait
        w = b.wait(i, "join", end, child, None, obj=child)  # a thread is one object: its tid, as its jw rows
        b.interval("jw", i, end, int(ev.exit[i]), w, child, obj=child)


def match(ev: Events, rows: list[Thread], opts: Options) -> Matched:
    """Waits (with their releaser) and every interval T of the paper's types."""
    b = _Builder(ev, opts)
    _locks(b)
    _conds(b)
    _sems(b)
    _spins(b)
    _barriers(b)
    _joins(b, rows)
    b.intervals.sort(key=itemgetter("start_ns", "end_ns"))
    t = np.fromiter((r["t_ns"] for r in b.intervals), np.int64, len(b.intervals))
    for k, (r, j) in enumerate(zip(b.intervals, jitter_of(t, opts.threshold_ns, opts.mode).tolist())):
        r["jitter_ns"] = j
        r["id"] = k
    return Matched(b.waits, b.intervals, dict(b.unmatched))


def segments(rows: list[Thread], waits: list[Wait]) -> list[Segment]:
    """Per thread, the stretches between its blocking waits: what it computed (wall time)."""
    per: dict[int, list[Wait]] = defaultdict(list)
    for w in waits:
        per[w["tid"]].append(w)
    out: list[Segment] = []
    for r in rows:
        t, at, after = r["start_ns"], r["start_ns"], -1
        for w in sorted(per.get(r["tid"], []), key=lambda w: w["enter_ns"]):
            if w["enter_ns"] > at:
                out.append(
                    {"pid": r["pid"], "tid": r["tid"], "start_ns": at, "end_ns": w["enter_ns"], "after_wait": after}
                )
            at, after = max(at, w["exit_ns"]), w["wait"]
        if r["end_ns"] is not None and r["end_ns"] > at:
            out.append({"pid": r["pid"], "tid": r["tid"], "start_ns": at, "end_ns": r["end_ns"], "after_wait": after})
        del t
    return out


TYPES = SYNC_TYPES + ("hd", "ns")  # every interval type: IntervalColumns.type codes into it


@dataclass(frozen=True)
class IntervalColumns:
    """The jitter intervals (rows in their list's order) as arrays, read once from the rows: the summary, the
    critical path and the subframes each walked the 100 k row dicts of a pigz run, a tenth of a second a walk.
    `type` codes into TYPES; `wait` and `releaser` are -1 where a row has none."""

    type: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    obj: np.ndarray
    start: np.ndarray
    end: np.ndarray
    t: np.ndarray
    jitter: np.ndarray
    id: np.ndarray
    wait: np.ndarray
    site: np.ndarray
    cpu: np.ndarray
    releaser: np.ndarray

    @classmethod
    def of(cls, intervals: list[Interval]) -> IntervalColumns:
        return cls.of_table(rows_table(intervals, JITTER))

    @classmethod
    def of_table(cls, table: pa.Table) -> IntervalColumns:
        """From the jitter table (schema.JITTER), which Arrow reads from the row dicts in C++ (sync/build.py
        writes that same table): twenty times faster than reading each column from them in Python."""

        def col(name: str, dtype: type, fill: int = 0) -> np.ndarray:
            return np.asarray(table.column(name).fill_null(fill).to_numpy(), dtype)

        codes = pc.index_in(table.column("type"), value_set=pa.array(TYPES, pa.string()))
        if codes.null_count:
            raise ValueError("an interval of no known type")
        return cls(
            np.asarray(codes.to_numpy(), np.int8),
            col("pid", np.int64),
            col("tid", np.int64),
            col("obj", np.uint64),
            col("start_ns", np.int64),
            col("end_ns", np.int64),
            col("t_ns", np.int64),
            col("jitter_ns", np.int64),
            col("id", np.int64),
            col("wait", np.int64, -1),
            col("site", np.uint64),
            col("cpu", np.int64),
            col("releaser_tid", np.int64, -1),
        )

    def __len__(self) -> int:
        return len(self.type)

    def take(self, rows: np.ndarray) -> IntervalColumns:
        """The rows `rows` (a mask or indices), in their order."""
        return IntervalColumns(*(getattr(self, f.name)[rows] for f in fields(self)))

    def rows(self, rows: np.ndarray) -> list[Interval]:
        """The rows `rows` (indices) as dicts, as far as the columns hold them."""
        out: list[Interval] = []
        for k in rows.tolist():
            out.append(
                {
                    "type": TYPES[int(self.type[k])],
                    "pid": int(self.pid[k]),
                    "tid": int(self.tid[k]),
                    "obj": int(self.obj[k]),
                    "start_ns": int(self.start[k]),
                    "end_ns": int(self.end[k]),
                    "wait": int(self.wait[k]) if self.wait[k] >= 0 else None,
                    "releaser_tid": int(self.releaser[k]) if self.releaser[k] >= 0 else None,
                }
            )
        return out

    def is_type(self, *types: str) -> np.ndarray:
        """Rows of any of `types`."""
        return np.isin(self.type, [TYPES.index(t) for t in types])


def rows_by(keys: np.ndarray, rows: np.ndarray) -> dict[int, np.ndarray]:
    """`rows` (indices, in order) grouped by `keys[rows]`, each key's rows in their order: one stable sort, not a
    scan of every row per key (a program of thousands of threads has as many keys)."""
    order = rows[np.argsort(keys[rows], kind="stable")]
    k = keys[order]
    cut = np.flatnonzero(k[1:] != k[:-1]) + 1
    heads = k[np.concatenate([[0], cut])].tolist() if len(k) else []
    return dict(zip((int(h) for h in heads), np.split(order, cut)))


def as_columns(intervals: list[Interval] | IntervalColumns) -> IntervalColumns:
    """`intervals` as columns (read from the rows if they are rows)."""
    return intervals if isinstance(intervals, IntervalColumns) else IntervalColumns.of(intervals)


def releaser_of(waits: list[Wait]) -> dict[int, list[Wait]]:
    """Waits by waiting thread, sorted by exit (for the critical-path walk)."""
    per: dict[int, list[Wait]] = defaultdict(list)
    for w in waits:
        per[w["tid"]].append(w)
    for v in per.values():
        v.sort(key=lambda w: w["exit_ns"])
    return per


def latest_before(waits: list[Wait], t: int, exits: list[int] | None = None) -> Wait | None:
    """The last wait (by exit) ending at or before t with a known releaser; `exits`: the waits' exits, if
    already listed (the walk asks once per step)."""
    if exits is None:
        exits = [w["exit_ns"] for w in waits]
    k = bisect.bisect_right(exits, t) - 1
    while k >= 0:
        if waits[k]["release_ns"] is not None and waits[k]["releaser_tid"]:
            return waits[k]
        k -= 1
    return None
