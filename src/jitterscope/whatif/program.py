"""A recorded `jitterscope sync` run as the DVFS replay's input: per thread, its compute segments (with
the time lost inside them) and its waits (with who released them, when, and the jitter of the wake-up).

Read from the run's tables (docs/run-format.md, "sync runs"; the happens-before graph described
there), never from the raw logs:

* `segments`: a thread's compute between blocking waits, in wall time;
* lost time inside a segment: the thread's own jitter intervals that are not wake-ups (caller side
  u, s, b, bar and the non-synchronisation `ns` pieces), each booking its thresholded jitter at the
  end of its interval, overlaps merged; `hd` is left out (it re-counts a wait from the holder's side,
  as the sync subframes do);
* `waits`: release (`release_ns` on `releaser_tid`'s timeline), and the waiter-side jitter (lu, sw,
  bw, barw, jw rows naming the wait); the rest of the wake-up (T - jitter, below the threshold) is
  the ideal machine's wake-up latency; a condvar wait no thread released (timed out, or its signal
  not seen) is linked to the thread's next released wait on that condvar: a polling loop, which the
  replay ends when that release comes (timing.py);
* `threads`: creator and create time (a thread starts after its creator's pthread_create).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field

from jitterscope.errors import JitterscopeError
from jitterscope.rundir import Run
from jitterscope.sync import rows as sync_rows
from jitterscope.sync.model import WAITER_TYPES


@dataclass
class Segment:
    start: int
    end: int
    lost: list[tuple[int, int]]  # recorded spans lost to jitter, merged, inside [start, end]
    creates: list[tuple[int, int]] = field(default_factory=list)  # (create_ns, child tid)


@dataclass
class Wait:
    wid: int
    op: str
    obj: int
    enter: int
    exit: int
    release: int | None
    releaser: int
    jitter: int  # waiter-side jitter booked on this wait
    # a condvar wait that no thread released (a timeout, a signal not seen): the thread's next released wait on
    # the same condvar, whose release ends the polling (timing.py)
    ends_by: Wait | None = None


@dataclass
class Thread:
    tid: int
    creator: int
    create_ns: int | None
    start: int
    end: int
    items: list[Segment | Wait]


@dataclass
class Program:
    threads: dict[int, Thread]
    lost_ns: int  # every lost span of every segment
    wake_jitter_ns: int  # every waiter-side jitter
    recorded_ns: int  # the run's length as recorded (first start -> last end)
    non_sync_seen: bool = True  # the run traced the kernel: preemption and interrupts in compute are in `lost`
    polls: int = 0  # condvar waits no thread released (timeouts), ended by the release of their polling loop
    missed_switches: int = 0  # context switches the trace lost: off-CPU time there is not seen as lost


def _merge(spans: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in spans):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


class _Spans:
    """One thread's lost spans, sorted once, so that each segment reads only the spans near it (a run with
    thousands of segments would otherwise sort every span once per segment)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = sorted(spans)
        self.starts = [s for s, _ in self.spans]
        self.longest = max((e - s for s, e in self.spans), default=0)

    def within(self, lo: int, hi: int) -> list[tuple[int, int]]:
        a = bisect.bisect_left(self.starts, lo - self.longest)
        b = bisect.bisect_left(self.starts, hi)
        return _merge([x for x in self.spans[a:b] if x[1] > lo], lo, hi)


def _lost_by_thread(jitter: list[sync_rows.Interval]) -> tuple[dict[int, list[tuple[int, int]]], dict[int, int]]:
    lost: dict[int, list[tuple[int, int]]] = defaultdict(list)
    wake: dict[int, int] = defaultdict(int)
    for r in jitter:
        j = int(r["jitter_ns"] or 0)
        if j <= 0 or r["type"] == "hd":
            continue
        if r["type"] in WAITER_TYPES and r["wait"] is not None:
            wake[int(r["wait"])] += j
        else:
            lost[int(r["tid"])].append((int(r["end_ns"]) - j, int(r["end_ns"])))
    return lost, wake


def _link_polls(items: list[Segment | Wait]) -> None:
    """Each unreleased condvar wait to the thread's next released wait on that condvar (latest first, so one pass)."""
    nxt: dict[int, Wait] = {}
    for it in reversed(items):
        if isinstance(it, Wait) and it.op == "cond":
            if it.release is None:
                it.ends_by = nxt.get(it.obj)
            else:
                nxt[it.obj] = it


def load_program(run: Run) -> Program:
    """The replay's input from a sync run; one-line error when it has nothing to replay."""
    segs: list[sync_rows.Segment] = run.table("segments").to_pylist()
    if not segs:
        raise JitterscopeError(
            f"{run.path}: the sync run has no compute segments (no thread ran to completion "
            "under the interposer): nothing to replay"
        )
    by_tid, wake = _lost_by_thread(run.table("jitter").to_pylist())
    lost = {tid: _Spans(spans) for tid, spans in by_tid.items()}
    creates: dict[int, list[tuple[int, int]]] = defaultdict(list)
    threads: dict[int, Thread] = {}
    threads_rows: list[sync_rows.Thread] = run.table("threads").to_pylist()
    for t in threads_rows:
        if t["start_ns"] is None or t["end_ns"] is None:
            continue
        threads[t["tid"]] = Thread(
            t["tid"], int(t["creator_tid"] or 0), t["create_ns"], int(t["start_ns"]), int(t["end_ns"]), []
        )
        if t["creator_tid"] and t["create_ns"] is not None:
            creates[int(t["creator_tid"])].append((int(t["create_ns"]), int(t["tid"])))
    per: dict[int, list[tuple[int, int, Segment | Wait]]] = defaultdict(list)
    total_lost = 0
    for s in segs:
        a, b = int(s["start_ns"]), int(s["end_ns"])
        spans = lost[s["tid"]].within(a, b) if s["tid"] in lost else []
        total_lost += sum(e - x for x, e in spans)
        c = [x for x in creates.get(s["tid"], []) if a <= x[0] <= b]
        per[s["tid"]].append((a, 0, Segment(a, b, spans, c)))
    waits: list[sync_rows.Wait] = run.table("waits").to_pylist()
    for w in waits:
        rel = w["release_ns"] if w["releaser_tid"] else None
        per[w["tid"]].append(
            (
                int(w["enter_ns"]),
                1,
                Wait(
                    int(w["wait"]),
                    w["op"],
                    int(w["obj"] or 0),
                    int(w["enter_ns"]),
                    int(w["exit_ns"]),
                    None if rel is None else int(rel),
                    int(w["releaser_tid"] or 0),
                    wake.get(int(w["wait"]), 0),
                ),
            )
        )
    for tid, items in per.items():
        if tid in threads:
            threads[tid].items = [x for _, _, x in sorted(items, key=lambda i: (i[0], i[1]))]
            _link_polls(threads[tid].items)
    threads = {t: th for t, th in threads.items() if th.items}
    if not threads:
        raise JitterscopeError(f"{run.path}: no thread of the sync run has both a start and an end: nothing to replay")
    first = min(th.start for th in threads.values())
    last = max(th.end for th in threads.values())
    polls = sum(1 for th in threads.values() for it in th.items if isinstance(it, Wait) and it.ends_by is not None)
    tracing = run.meta.get("tracing") or {}
    traced = bool(tracing.get("enabled"))
    missed = int(tracing.get("missed_switches") or 0)
    return Program(threads, total_lost, sum(wake.values()), last - first, traced, polls, missed)
