"""Random programs for the DVFS replay tests: a main thread creating workers and joining them, every
thread alternating compute segments (with lost spans, some at a segment's very start or end, some
touching each other) and waits (mutex, condvar, barrier) with wake-up jitter."""

from __future__ import annotations

import random

from jitterscope.whatif.program import Program, Segment, Thread, Wait


def _segment(rng: random.Random, t: int, creates: list[tuple[int, int]]) -> Segment:
    length = rng.choice([5_000, 90_000, 330_000, 1_000_000, rng.randrange(1, 3_000_000)])
    lost: list[tuple[int, int]] = []
    at = t
    while rng.random() < 0.7:
        at += rng.choice([0, rng.randrange(0, max(length // 3, 1))])
        span = rng.choice([1_000, 20_000, rng.randrange(1, 200_000)])
        if at + span > t + length:
            break
        lost.append((at, at + span))
        at += span
    return Segment(t, t + length, lost, [(c, tid) for c, tid in creates if t <= c <= t + length])


def random_program(rng: random.Random) -> Program:
    nthreads = rng.randint(1, 4)
    threads: dict[int, Thread] = {}
    t0 = 1_000
    create_at = {tid: t0 + rng.randrange(0, 200_000) for tid in range(2, nthreads + 1)}
    for tid in range(1, nthreads + 1):
        t = create_at.get(tid, t0) + (5_000 if tid > 1 else 0)
        items: list[Segment | Wait] = []
        mine = [(c, w) for w, c in create_at.items()] if tid == 1 else []
        for n in range(rng.randint(1, 8)):
            seg = _segment(rng, t, mine)
            items.append(seg)
            t = seg.end
            if n % 2 == 0 or tid > 1:
                dur = rng.randrange(1_000, 400_000)
                op = rng.choice(["mutex", "cond", "barrier"])
                items.append(
                    Wait(
                        100 * tid + n,
                        op,
                        7,
                        t,
                        t + dur,
                        t + dur // 2,
                        1 + (tid % nthreads),
                        rng.choice([0, 0, rng.randrange(1, dur)]),
                    )
                )
                t += dur
        if tid == 1:
            for w in range(2, nthreads + 1):
                items.append(Wait(10_000 + w, "join", w, t, t + 1_000, t + 500, w, rng.choice([0, 3_000])))
                t += 1_000
            seg = _segment(rng, t, [])
            items.append(seg)
            t = seg.end
        threads[tid] = Thread(
            tid,
            0 if tid == 1 else 1,
            None if tid == 1 else create_at[tid],
            items[0].start if isinstance(items[0], Segment) else t0,
            t,
            items,
        )
    lost = sum(e - s for th in threads.values() for it in th.items if isinstance(it, Segment) for s, e in it.lost)
    first = min(th.start for th in threads.values())
    return Program(threads, lost, 0, max(th.end for th in threads.values()) - first)
