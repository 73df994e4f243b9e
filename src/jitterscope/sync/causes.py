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

import bisect
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jitterscope import boundedio
from jitterscope.measure.attribution import attribute, overlaps, source_table
from jitterscope.measure.peers import name_threads
from jitterscope.measure.tsc import since_ns
from jitterscope.sync.model import RELEASER_TYPES, WAITER_TYPES, jitter_of
from jitterscope.sync.rows import Cause, Interval, Thread, Wait
from jitterscope.tracing.parse import parse_trace

SELF = ("self", "self")


@dataclass
class Timeline:
    """The trace as the attribution engine needs it, in ns since t0."""

    seg_cpu: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    seg_src: np.ndarray
    seg_pid: np.ndarray  # pid (tid) owning each segment's activity
    sources: list[tuple[str, str]]
    slices: dict[int, list[tuple[int, int, int, bool]]]  # tid -> [(cpu, start, end, preempted)]
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
    names: pa.Array, kinds: pa.Array, pids: np.ndarray, program_tids: set[int], tool_pid: int
) -> tuple[np.ndarray, pa.Array]:
    """(rows that are the program's threads, source names): the program's threads by tid ("pigz (tid 4242)",
    so a waiter's own time is found); the sync command's process (`tool_pid`) as jitterscope's overhead;
    another jitterscope's threads named so.  A sync run has no probe of its own, so another run's
    `js-probe/N` must be a named source: attribution books an unsuffixed one as `unexplained`."""
    is_thread = np.asarray(pc.equal(kinds, "thread").to_numpy(zero_copy_only=False))
    mine = is_thread & np.isin(pids, list(program_tids))
    others = name_threads(names, kinds, pids, {tool_pid} - set(program_tids) - {0})
    if not mine.any():
        return mine, others
    return mine, pa.array(
        [f"{n} (tid {p})" if m else o for n, o, p, m in zip(names.to_pylist(), others.to_pylist(), pids, mine)],
        pa.string(),
    )


def _session_pid(trace_dir: Path) -> int:
    info = boundedio.read_json_or_none(trace_dir / "session.json", "trace session record") or {}
    try:
        return int(info.get("pid") or 0)
    except (TypeError, ValueError):
        return 0


def load_timeline(trace_dir: Path, t0_tsc: int, hz: float, program_tids: set[int]) -> Timeline:

    td = parse_trace(trace_dir)
    act = td.activity
    kinds = act.column("kind").combine_chunks()
    names = act.column("name").combine_chunks()
    pids = act.column("pid").to_numpy()
    mine, labels = label_threads(names, kinds, pids, program_tids, _session_pid(trace_dir))
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
    slices: dict[int, list[tuple[int, int, int, bool]]] = defaultdict(list)
    for i in np.flatnonzero(mine):
        slices[int(pids[i])].append((int(cpu[i]), int(starts[i]), int(ends[i]), bool(pre[i])))
    for v in slices.values():
        v.sort(key=lambda s: s[1])
    return Timeline(
        np.asarray(seg["cpu"]).astype(np.int32),
        since_ns(np.asarray(seg["start_tsc"]), t0_tsc, hz),
        since_ns(np.asarray(seg["end_tsc"]), t0_tsc, hz),
        codes[owner] if len(owner) else codes[:0],
        pids[owner] if len(owner) else pids[:0],
        sources,
        dict(slices),
        int(td.lost_events),
        int(td.n_events),
        td.missed_switches,
    )


def lost_pieces(tl: Timeline, tid: int) -> list[tuple[int, int, int]]:
    """(cpu, start, end) of the time thread `tid` lost: interrupts inside its slices,
    and the gaps after a slice that ended with it still runnable (preempted); in slice order."""
    sl = np.array(tl.slices.get(tid, []), dtype=np.int64).reshape(-1, 4)
    if not len(sl):
        return []
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
    return [(int(c), int(a), int(b)) for c, a, b in p[:, 1:4].tolist()]


_Booked = tuple[Interval, list[tuple[int, int, int]], str]  # an interval, its (cpu, start, end) pieces, its side


def _attribute(tl: Timeline, cpu: np.ndarray, start: np.ndarray, end: np.ndarray) -> list[list[tuple[str, str, int]]]:
    """Per interval, [(kind, name, ns)] of the sources that owned its time."""
    att = attribute(cpu, start, end - start, tl.seg_cpu, tl.seg_start, tl.seg_end, tl.seg_src, tl.sources)
    out: list[list[tuple[str, str, int]]] = [[] for _ in range(len(start))]
    for d, s, ns in zip(att.detour.tolist(), att.source.tolist(), att.ns.tolist()):
        k, n = att.sources[s]
        out[d].append((k, n, int(ns)))
    return out


def _self(name: str, tid: int) -> bool:
    return name.endswith(f"(tid {tid})")


def explain(
    tl: Timeline,
    intervals: list[Interval],
    waits: list[Wait],
    threads: list[Thread],
    threshold_ns: int,
    mode: str,
) -> tuple[list[Interval], list[Cause]]:
    """Causes of every jitter interval, plus the hd and ns intervals; returns (new intervals, causes)."""
    causes = _call_causes(tl, intervals)
    # a thread's lost time within its life (before exec the main thread's pid was still jitterscope's child)
    life = {r["tid"]: (r["start_ns"], r["end_ns"]) for r in threads}
    pieces = {t: sorted(_clip(lost_pieces(tl, t), *life[t]), key=lambda x: x[1]) for t in life}
    rows: list[_Booked] = []
    for w, release, inside in _holder_pieces(waits, pieces):
        rows.append(
            (
                {
                    "type": "hd",
                    "pid": w["pid"],
                    "tid": w["tid"],
                    "obj": w["obj"],
                    "start_ns": w["enter_ns"],
                    "end_ns": release,
                    "wait": w["wait"],
                    "releaser_tid": w["releaser_tid"],
                },
                inside,
                "holder",
            )
        )
    pids = {r["tid"]: r["pid"] for r in threads}
    for tid, piece in _non_sync_pieces(intervals, pieces):
        rows.append(
            (
                {
                    "type": "ns",
                    "pid": pids.get(tid, 0),
                    "tid": tid,
                    "obj": 0,
                    "start_ns": piece[1],
                    "end_ns": piece[2],
                    "wait": None,
                    "releaser_tid": None,
                },
                [piece],
                "thread",
            )
        )
    t = np.array([sum(e - b for _, b, e in p) for _, p, _ in rows], dtype=np.int64)
    new: list[Interval] = []
    booked: list[_Booked] = []
    for (row, p, side), tt, j in zip(rows, t, jitter_of(t, threshold_ns, mode)):
        if j > 0:
            row.update(
                {"id": len(intervals) + len(new), "t_ns": int(tt), "jitter_ns": int(j), "cpu": p[0][0], "site": 0}
            )
            new.append(row)
            booked.append((row, p, side))
    causes += _book(tl, booked)
    return new, causes


def _call_causes(tl: Timeline, intervals: list[Interval]) -> list[Cause]:
    """Waiter side: what ran on the waiter's CPU from the release to its return; caller side: during the call."""
    causes: list[Cause] = []
    sel = [r for r in intervals if r["jitter_ns"] > 0 and r["type"] in WAITER_TYPES + RELEASER_TYPES]
    if not sel:
        return causes
    parts = _attribute(
        tl,
        np.array([r["cpu"] for r in sel]),
        np.array([r["start_ns"] for r in sel]),
        np.array([r["end_ns"] for r in sel]),
    )
    for r, p in zip(sel, parts):
        side = "waiter" if r["type"] in WAITER_TYPES else "caller"
        for kind, name, ns in p:
            kind, name = SELF if kind == "thread" and _self(name, r["tid"]) else (kind, name)
            causes.append({"jitter": r["id"], "side": side, "kind": kind, "name": name, "ns": ns})
    return causes


def _holder_pieces(
    waits: list[Wait], pieces: dict[int, list[tuple[int, int, int]]]
) -> list[tuple[Wait, int, list[tuple[int, int, int]]]]:
    """Holder delay: per wait with a known releaser, its release and the releaser's lost pieces while the waiter
    waited."""
    ends = {t: [e for _, _, e in p] for t, p in pieces.items()}  # disjoint per thread: sorted too
    out = []
    for w in waits:
        r, b = w["releaser_tid"], w["release_ns"]
        if not r or b is None or r not in pieces:
            continue
        a = w["enter_ns"]
        lst = pieces[r]
        k = bisect.bisect_right(ends[r], a)
        inside = []
        while k < len(lst) and lst[k][1] < b:
            c, s0, e0 = lst[k]
            if min(e0, b) > max(s0, a):
                inside.append((c, max(s0, a), min(e0, b)))
            k += 1
        if inside:
            out.append((w, b, inside))
    return out


def _non_sync_pieces(
    intervals: list[Interval], pieces: dict[int, list[tuple[int, int, int]]]
) -> list[tuple[int, tuple[int, int, int]]]:
    """Non-synchronisation (seed App. C.2.4): a thread's lost pieces outside every interval it books itself
    (its wake-ups, and its own unlock/signal/broadcast/barrier/post calls: time lost there is already that
    interval's T), each piece cut to what lies outside them, so a nanosecond is booked once."""
    own: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for r in intervals:
        if r["type"] in WAITER_TYPES + RELEASER_TYPES:
            own[r["tid"]].append((r["start_ns"], r["end_ns"]))
    out = []
    for tid, p in pieces.items():
        merged: list[list[int]] = []
        for s, e in sorted(own.get(tid, [])):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        starts = [s for s, _ in merged]
        for cpu, lo, hi in p:
            k = max(bisect.bisect_right(starts, lo) - 1, 0)
            at = lo
            while k < len(merged) and merged[k][0] < hi:
                s, e = merged[k]
                if e > at:
                    if s > at:
                        out.append((tid, (cpu, at, s)))
                    at = max(at, e)
                k += 1
            if at < hi:
                out.append((tid, (cpu, at, hi)))
    return out


def _clip(pieces: list[tuple[int, int, int]], lo: int, hi: int) -> list[tuple[int, int, int]]:
    return [(c, max(s, lo), min(e, hi)) for c, s, e in pieces if min(e, hi) > max(s, lo)]


def _book(tl: Timeline, rows: list[_Booked]) -> list[Cause]:
    """The causes of each (interval, its pieces, side): the sources owning its pieces' time, summed per source.
    One attribution call for every piece of every interval (one call per interval cost a millisecond each)."""
    if not rows:
        return []
    owner = np.repeat(np.arange(len(rows)), [len(p) for _, p, _ in rows])
    flat = np.array([piece for _, p, _ in rows for piece in p], dtype=np.int64).reshape(-1, 3)
    att = attribute(
        flat[:, 0], flat[:, 1], flat[:, 2] - flat[:, 1], tl.seg_cpu, tl.seg_start, tl.seg_end, tl.seg_src, tl.sources
    )
    row_of = owner[att.detour]
    key = row_of.astype(np.int64) * len(att.sources) + att.source
    order = np.argsort(key, kind="stable")  # rows in order, sources in first-seen order within a row
    uniq, first = np.unique(key[order], return_index=True)
    sums = np.add.reduceat(att.ns[order], first) if len(order) else np.zeros(0, np.int64)
    first_at = order[first]
    out: list[Cause] = []
    for k in np.argsort(first_at, kind="stable"):  # each row's causes in the order its pieces met them
        r, s = divmod(int(uniq[k]), len(att.sources))
        row, _, side = rows[r]
        kind, name = att.sources[s]
        out.append({"jitter": row["id"], "side": side, "kind": kind, "name": name, "ns": int(sums[k])})
    return out
