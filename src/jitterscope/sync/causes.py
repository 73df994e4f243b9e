"""The kernel cause of each late wake-up: the attribution engine on the program's threads.

The trace (private instance on every CPU the program runs on) gives each CPU's
time as segments owned by the innermost context.  For a jitter interval the
attribution engine (measure/attribution.py) splits its time among them:

* waiter side (lu, sw, bw, barw, jw): [release, w_x] on the CPU the waiter
  returned on: idle (the vCPU's wake-up), another task or an interrupt running
  there, or the waiter itself (`self`: its wake-up path, re-locking);
* caller side (u, s, b, bar): [entry, exit] on the caller's CPU;
* holder delay `hd` (an extension the paper's hardware could not see): for a
  wait whose releaser was known, the releaser's *lost* time between the
  waiter's entry and the release: interrupts inside its slices and the time it
  sat preempted (runnable, its CPU taken: sched_switch prev_state), each piece
  attributed on the CPU it lost;
* non-synchronisation `ns` (seed App. C.2.4): every other lost piece of a
  program thread, outside its wake-up intervals.

The same threshold rule turns hd and ns pieces into jitter.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jitterscope import boundedio
from jitterscope.measure.attribution import attribute, merge_spans, overlaps, source_table
from jitterscope.measure.peers import name_threads
from jitterscope.measure.tsc import since_ns
from jitterscope.sync.causetable import SIDES, CauseTable
from jitterscope.sync.model import RELEASER_TYPES, WAITER_TYPES, IntervalColumns, as_columns, jitter_of, rows_by
from jitterscope.sync.rows import Interval, Thread, Wait
from jitterscope.sync.schema import TABLES
from jitterscope.tracing.parse import parse_trace

SELF = ("self", "self")
Pieces = dict[int, np.ndarray]  # tid -> (cpu, start, end) rows of its lost time, sorted by start, disjoint


@dataclass
class Timeline:
    """The trace as the attribution engine needs it, in ns since t0."""

    seg_cpu: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    seg_src: np.ndarray
    seg_pid: np.ndarray  # pid (tid) owning each segment's activity
    sources: list[tuple[str, str]]
    slices: dict[int, np.ndarray]  # tid -> (cpu, start, end, preempted) rows, in time order
    lost_events: int
    events: int
    missed_switches: int
    _by_cpu: dict[int, np.ndarray] | None = None

    def on_cpu(self, cpu: int) -> np.ndarray:
        """Indices of the segments of one CPU, in time order (segments are sorted by cpu, start)."""
        if self._by_cpu is None:
            self._by_cpu = {int(c): np.flatnonzero(self.seg_cpu == c) for c in np.unique(self.seg_cpu)}
        return self._by_cpu.get(int(cpu), np.zeros(0, np.int64))


def label_threads(
    names: pa.Array, kinds: pa.Array, pids: np.ndarray, program_tids: set[int], own_tids: set[int]
) -> tuple[np.ndarray, pa.Array]:
    """(rows that are the program's threads, source names): the program's threads by tid ("pigz (tid 4242)",
    so a waiter's own time is found); the sync command's threads and processes (`own_tids`: its main thread,
    warm-up thread, fit process, trace reader) as jitterscope's overhead; another jitterscope's threads named
    so.  A sync run has no probe of its own, so another run's `js-probe/N` must be a named source:
    attribution books an unsuffixed one as `unexplained`."""
    is_thread = np.asarray(pc.equal(kinds, "thread").to_numpy(zero_copy_only=False))
    mine = is_thread & np.isin(pids, list(program_tids))
    others = name_threads(names, kinds, pids, set(own_tids) - set(program_tids) - {0})
    if not mine.any():
        return mine, others
    # "name (tid N)" for the program's rows, in Arrow's kernels (a Python string per activity row cost 0.04 s)
    tid = pc.cast(pa.array(pids, pa.int64()), pa.string())
    named = pc.binary_join_element_wise(names.cast(pa.string()).fill_null("None"), " (tid ", tid, ")", "")
    return mine, pc.if_else(pa.array(mine), named, others.cast(pa.string()))


def _session_pid(trace_dir: Path) -> int:
    info = boundedio.read_json_or_none(trace_dir / "session.json", "trace session record") or {}
    try:
        return int(info.get("pid") or 0)
    except (TypeError, ValueError):
        return 0


def load_timeline(
    trace_dir: Path, t0_tsc: int, hz: float, program_tids: set[int], own_tids: frozenset[int] = frozenset()
) -> Timeline:
    """The trace as the causes need it; `own_tids`: the sync command's threads and processes beside the
    session's own (sync/runner.py records them as CMD starts)."""

    td = parse_trace(trace_dir)
    act = td.activity
    kinds = act.column("kind").combine_chunks()
    names = act.column("name").combine_chunks()
    pids = act.column("pid").to_numpy()
    mine, labels = label_threads(names, kinds, pids, program_tids, {_session_pid(trace_dir), *own_tids})
    sources, codes = source_table(kinds, labels)
    seg = td.segments
    owner = np.asarray(seg["owner"]).astype(np.int64)
    starts = since_ns(act.column("start_tsc").to_numpy(), t0_tsc, hz)
    ends = since_ns(act.column("end_tsc").to_numpy(), t0_tsc, hz)
    cpu = act.column("cpu").to_numpy()
    pre = (
        act.column("preempted").to_numpy(zero_copy_only=False)
        if "preempted" in act.column_names
        else np.zeros(act.num_rows, bool)
    )
    # each program thread's slices, (cpu, start, end, preempted) rows in time order (ties: the trace's order)
    idx = np.flatnonzero(mine)
    tid = pids[idx].astype(np.int64)
    order = np.lexsort((starts[idx], tid))
    rows = np.column_stack([cpu[idx], starts[idx], ends[idx], pre[idx]]).astype(np.int64)[order]
    cut = np.flatnonzero(np.diff(tid[order])) + 1
    slices = {int(g[0]): r for g, r in zip(np.split(tid[order], cut), np.split(rows, cut)) if len(g)}
    return Timeline(
        np.asarray(seg["cpu"]).astype(np.int32),
        since_ns(np.asarray(seg["start_tsc"]), t0_tsc, hz),
        since_ns(np.asarray(seg["end_tsc"]), t0_tsc, hz),
        codes[owner] if len(owner) else codes[:0],
        pids[owner] if len(owner) else pids[:0],
        sources,
        slices,
        int(td.lost_events),
        int(td.n_events),
        td.missed_switches,
    )


def lost_pieces(tl: Timeline, tid: int) -> np.ndarray:
    """(cpu, start, end) rows of the time thread `tid` lost: interrupts inside its slices,
    and the gaps after a slice that ended with it still runnable (preempted); in slice order."""
    sl = tl.slices.get(tid, np.zeros((0, 4), np.int64))
    if not len(sl):
        return np.zeros((0, 3), np.int64)
    cpu, s, e, pre = sl[:, 0], sl[:, 1], sl[:, 2], sl[:, 3].astype(bool)
    thread_src = np.array([k == "thread" for k, _ in tl.sources], bool)
    parts = []  # (slice, cpu, start, end, after the slice's own pieces)
    for c in np.unique(cpu):
        k = np.flatnonzero(cpu == c)
        seg = tl.on_cpu(int(c))
        i, j, ov, st = overlaps(s[k], e[k], tl.seg_start[seg], tl.seg_end[seg])
        seg = seg[j]
        other = (tl.seg_pid[seg] != tid) | ~thread_src[tl.seg_src[seg]]
        i, ov, st = i[other], ov[other], st[other]
        parts.append(np.column_stack([k[i], np.full(len(i), c), st, st + ov, np.zeros(len(i), np.int64)]))
    gap = np.flatnonzero(pre[:-1] & (s[1:] > e[:-1]))
    parts.append(np.column_stack([gap, cpu[gap], e[gap], s[gap + 1], np.ones(len(gap), np.int64)]))
    p = np.concatenate(parts).astype(np.int64)
    p = p[np.lexsort((p[:, 4], p[:, 2], p[:, 0]))]
    return p[:, 1:4]


_TID = re.compile(r"\(tid (\d+)\)$")


def _source_tids(sources: list[tuple[str, str]]) -> np.ndarray:
    """The tid a program thread's source names ("pigz (tid 4242)"), -1 for any other source."""
    out = np.full(len(sources), -1, np.int64)
    for k, (kind, name) in enumerate(sources):
        m = _TID.search(name) if kind == "thread" else None
        if m:
            out[k] = int(m.group(1))
    return out


def explain(
    tl: Timeline,
    intervals: list[Interval] | IntervalColumns,
    waits: list[Wait],
    threads: list[Thread],
    threshold_ns: int,
    mode: str,
) -> tuple[pa.Table, CauseTable]:
    """Causes of every jitter interval, plus the hd and ns intervals; returns (new intervals, as rows of the
    jitter table (schema.JITTER) that follow `intervals`, and causes)."""
    c = as_columns(intervals)
    causes = _call_causes(tl, c)
    # a thread's lost time within its life (before exec the main thread's pid was still jitterscope's child)
    life = {r["tid"]: (r["start_ns"], r["end_ns"]) for r in threads}
    pieces = {t: _clip(lost_pieces(tl, t), *life[t]) for t in life}
    hd_waits, hd = _holder_pieces(waits, pieces)  # hd: (wait k, cpu, start, end) rows, by k
    ns = _non_sync_pieces(c, pieces)  # (tid, cpu, start, end) rows
    # T of every candidate first: a row is made only for the ones over the threshold (most are not)
    cut = np.flatnonzero(np.diff(hd[:, 0], prepend=-1))  # each wait's first piece
    t_hd = np.add.reduceat(hd[:, 3] - hd[:, 2], cut) if len(hd) else np.zeros(0, np.int64)
    t = np.concatenate([t_hd, ns[:, 3] - ns[:, 2]])
    j = jitter_of(t, threshold_ns, mode)
    keep = np.flatnonzero(j > 0)
    new = _new_rows(keep, len(hd_waits), [waits[k] for k in hd_waits], hd[cut], ns, threads)
    new["id"] = np.arange(len(c), len(c) + len(keep), dtype=np.int64)
    new["t_ns"], new["jitter_ns"] = t[keep], j[keep]
    is_hd = keep < len(hd_waits)
    sides = np.where(is_hd, SIDES.index("holder"), SIDES.index("thread")).astype(np.int64)
    # the kept rows' pieces, each row's in order, and the row (of the new ones) each belongs to
    row_of = np.full(len(t), -1, np.int64)
    row_of[keep] = np.arange(len(keep))
    hd_row = row_of[: len(hd_waits)][hd[:, 0]] if len(hd) else np.zeros(0, np.int64)
    ns_row = row_of[len(hd_waits) :]
    owner = np.concatenate([hd_row[hd_row >= 0], ns_row[ns_row >= 0]])
    flat = np.concatenate([hd[hd_row >= 0, 1:], ns[ns_row >= 0, 1:]])
    causes += _book(tl, new["id"], sides, owner, flat)
    schema = TABLES["jitter"]
    table = pa.Table.from_arrays(
        [pa.array(new[f.name], type=f.type, mask=~is_hd if f.name in NULL_FOR_NS else None) for f in schema],
        schema=schema,
    )
    return table, causes


NULL_FOR_NS = ("wait", "releaser_tid")  # an ns row belongs to no wait


def _new_rows(
    keep: np.ndarray, n_hd: int, hd_waits: list[Wait], first_hd: np.ndarray, ns: np.ndarray, threads: list[Thread]
) -> dict[str, np.ndarray]:
    """The columns of the new rows `keep` (places among the hd candidates, one per wait of `hd_waits`, then the
    ns pieces `ns`), less their id, T and jitter: an hd row is its wait's (from its entry to the release, on the
    CPU of the holder's first piece); an ns row its piece's (on no object)."""
    h = keep[keep < n_hd]
    n = ns[keep[keep >= n_hd] - n_hd]
    w = [hd_waits[k] for k in h.tolist()]

    def of_waits(key: str) -> np.ndarray:
        return np.fromiter((x[key] for x in w), np.int64, len(w))

    pid_of = {r["tid"]: r["pid"] for r in threads}
    zeros = np.zeros(len(n), np.int64)
    return {
        "type": np.array(["hd"] * len(h) + ["ns"] * len(n), object),
        "pid": np.concatenate([of_waits("pid"), np.fromiter((pid_of.get(x, 0) for x in n[:, 0].tolist()), np.int64)]),
        "tid": np.concatenate([of_waits("tid"), n[:, 0]]),
        "obj": np.concatenate([np.fromiter((x["obj"] for x in w), np.uint64, len(w)), zeros.astype(np.uint64)]),
        "start_ns": np.concatenate([of_waits("enter_ns"), n[:, 2]]),
        "end_ns": np.concatenate([of_waits("release_ns"), n[:, 3]]),
        "wait": np.concatenate([of_waits("wait"), zeros]),
        "releaser_tid": np.concatenate([of_waits("releaser_tid"), zeros]),
        "cpu": np.concatenate([first_hd[h, 1], n[:, 1]]),
        "site": np.zeros(len(h) + len(n), np.uint64),
    }


def _call_causes(tl: Timeline, intervals: list[Interval] | IntervalColumns) -> CauseTable:
    """Waiter side: what ran on the waiter's CPU from the release to its return; caller side: during the call."""
    c = as_columns(intervals)
    sel = np.flatnonzero((c.jitter > 0) & c.is_type(*WAITER_TYPES, *RELEASER_TYPES))
    if not len(sel):
        return CauseTable.empty()
    cpu, start, end = c.cpu[sel], c.start[sel], c.end[sel]
    att = attribute(cpu, start, end - start, tl.seg_cpu, tl.seg_start, tl.seg_end, tl.seg_src, tl.sources)
    order = np.argsort(att.detour, kind="stable")  # by interval, each one's sources in the order met
    d, src = att.detour[order], att.source[order].astype(np.int64)
    tids = c.tid[sel]
    own = _source_tids(att.sources)[src] == tids[d]  # the waiter's (or caller's) own thread: `self`
    waiter = c.is_type(*WAITER_TYPES)[sel]
    side = np.where(waiter, SIDES.index("waiter"), SIDES.index("caller")).astype(np.int64)
    ids = c.id[sel]
    sources = (*att.sources, SELF)
    return CauseTable(ids[d], side[d], np.where(own, len(att.sources), src), att.ns[order].astype(np.int64), sources)


def _holder_pieces(waits: list[Wait], pieces: Pieces) -> tuple[list[int], np.ndarray]:
    """Holder delay: the releaser's lost pieces while the waiter waited, for each wait with a known releaser.
    Returns the waits that have any (their indices, in order) and the pieces as (k, cpu, start, end) rows, k
    the wait's place in that list, sorted by k and then time."""
    by_releaser: dict[int, list[int]] = defaultdict(list)
    for k, w in enumerate(waits):
        r = w["releaser_tid"]
        if r and w["release_ns"] is not None and r in pieces:
            by_releaser[r].append(k)
    found = [np.zeros((0, 4), np.int64)]  # (wait, cpu, start, end) of every piece inside a wait
    for r, ks in by_releaser.items():
        lst = pieces[r]
        at = np.array(ks, np.int64)
        a = np.array([waits[k]["enter_ns"] for k in ks], np.int64)
        b = np.array([waits[k]["release_ns"] for k in ks], np.int64)
        i, j, ov, st = overlaps(a, b, lst[:, 1], lst[:, 2])
        found.append(np.column_stack([at[i], lst[j, 0], st, st + ov]))
    f = np.concatenate(found)
    f = f[np.argsort(f[:, 0], kind="stable")]  # in the waits' order, each wait's pieces in time order
    with_pieces, f[:, 0] = np.unique(f[:, 0], return_inverse=True)
    return with_pieces.tolist(), f


def _non_sync_pieces(intervals: list[Interval] | IntervalColumns, pieces: Pieces) -> np.ndarray:
    """Non-synchronisation (seed App. C.2.4): a thread's lost pieces outside every interval it books itself
    (its wake-ups, and its own unlock/signal/broadcast/barrier/post calls: time lost there is already that
    interval's T), each piece cut to what lies outside them, so a nanosecond is booked once: (tid, cpu, start, end)
    rows, in the threads' order, each thread's in time order."""
    c = as_columns(intervals)
    own = rows_by(c.tid, np.flatnonzero(c.is_type(*WAITER_TYPES, *RELEASER_TYPES)))
    none = np.zeros(0, np.int64)
    out = [np.zeros((0, 4), np.int64)]
    for t, p in pieces.items():
        mine = own.get(t, none)
        gs, ge = _gaps(np.column_stack([c.start[mine], c.end[mine]]).astype(np.int64).reshape(-1, 2))
        i, _, ov, st = overlaps(p[:, 1], p[:, 2], gs, ge)  # each piece's parts in the gaps, in time order
        out.append(np.column_stack([np.full(len(i), t, np.int64), p[i, 0], st, st + ov]))
    return np.concatenate(out)


_FAR = np.int64(1) << 62  # beyond any time of a run, in ns


def _gaps(spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the time outside the union of `spans` ((start, end) rows): sorted, disjoint; spans that
    touch are one."""
    starts, ends = merge_spans(spans[:, 0], spans[:, 1], 0)
    return np.append(-_FAR, ends), np.append(starts, _FAR)


def _clip(pieces: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The pieces cut to [lo, hi], empty ones dropped, sorted by start (stable)."""
    c = np.column_stack([pieces[:, 0], np.maximum(pieces[:, 1], lo), np.minimum(pieces[:, 2], hi)])
    c = c[c[:, 2] > c[:, 1]]
    return c[np.argsort(c[:, 1], kind="stable")]


def _book(tl: Timeline, ids: np.ndarray, sides: np.ndarray, owner: np.ndarray, flat: np.ndarray) -> CauseTable:
    """The causes of each interval (of id `ids`, booked on `sides`, codes into SIDES): the sources owning its
    pieces' time (`flat`, (cpu, start, end) rows, each of the interval `owner` indexes), summed per source.
    One attribution call for every piece of every interval (one call per interval cost a millisecond each)."""
    if not len(ids):
        return CauseTable.empty()
    att = attribute(
        flat[:, 0], flat[:, 1], flat[:, 2] - flat[:, 1], tl.seg_cpu, tl.seg_start, tl.seg_end, tl.seg_src, tl.sources
    )
    row_of = owner[att.detour]
    key = row_of.astype(np.int64) * len(att.sources) + att.source
    order = np.argsort(key, kind="stable")  # rows in order, sources in first-seen order within a row
    uniq, first = np.unique(key[order], return_index=True)
    sums = np.add.reduceat(att.ns[order], first) if len(order) else np.zeros(0, np.int64)
    k = np.argsort(order[first], kind="stable")  # each row's causes in the order its pieces met them
    r, s = np.divmod(uniq[k], len(att.sources))
    return CauseTable(ids[r], sides[r], s, sums[k].astype(np.int64), tuple(att.sources))
