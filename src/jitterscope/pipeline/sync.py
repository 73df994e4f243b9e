"""Step d: synchronisation by counting signals (recovered from the thesis Appendix A, spec section 3.5).

Each thread runs, every iteration, its list of `W s` (wait for a token of
signal s), `E sub-box` (execute) and `S s` (post a token).  For every
dependency between sub-boxes on different threads:

- read after write: the producer posts, the consumer waits; no initial token;
- write after read: the consumer posts, the producer of the next iteration
  waits; one initial token (the appendix's `!`), so a pipeline is at most one
  iteration deep per buffer.

Same-thread pairs need nothing.  Around a sub-box the waits come RAW first
then WAR, the posts WAR first then RAW: the appendix's exact op lists.  With
memory reuse, an access of iteration k+1 to a shared range must also follow
the other buffer's accesses of iteration k; a one-token signal is added only
where the order is not already implied.  The barrier heuristic adds a
one-token signal from every last sub-box of an iteration to every first one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jitterscope.pipeline.heuristics import ThreadPlan
from jitterscope.pipeline.memory import MemoryMap
from jitterscope.pipeline.order import Order
from jitterscope.pipeline.split import Access, Instantiated

KINDS = ("RAW", "WAR", "reuse", "barrier")


@dataclass
class Signal:
    name: str
    src: int  # posting sub-box
    dst: int  # waiting sub-box
    tokens: int
    kind: str


@dataclass
class Sync:
    signals: list[Signal]
    ops: list[list[tuple[str, int]]]  # per thread: ("W"|"S", signal index) or ("E", sub-box index)
    order: Order = field(repr=False)


def mem_range(inst: Instantiated, mem: MemoryMap, a: Access) -> tuple[int, int]:
    rb = inst.graph.row_bytes
    base = mem.offsets[a.buffer]
    return base + a.row0 * rb, base + a.row1 * rb


def reuse_conflicts(inst: Instantiated, mem: MemoryMap, prec: list[list[bool]]) -> list[tuple[int, int]]:
    """(earlier, later) sub-box pairs touching the same bytes through two different buffers."""
    out: set[tuple[int, int]] = set()
    by_buffer: dict[int, list[tuple[int, Access]]] = {}
    for s, acc in enumerate(inst.accesses):
        for a in acc:
            by_buffer.setdefault(a.buffer, []).append((s, a))
    n = len(inst.graph.buffers)
    for x in range(n):
        for y in range(n):
            if x == y or not prec[x][y] or not mem.overlap(x, y):
                continue
            for s, a in by_buffer.get(x, []):
                ra = mem_range(inst, mem, a)
                for t, b in by_buffer.get(y, []):
                    if (a.write or b.write) and s != t:
                        rb = mem_range(inst, mem, b)
                        if ra[0] < rb[1] and rb[0] < ra[1]:
                            out.add((s, t))
    return sorted(out)


def synchronise(inst: Instantiated, plan: ThreadPlan, mem: MemoryMap, prec: list[list[bool]]) -> Sync:
    thread = plan.thread_of()
    raw: list[tuple[int, int, int, str]] = []  # (src, dst, tokens, kind)
    for p, c in inst.edges:
        if thread[p] != thread[c]:
            raw.append((p, c, 0, "RAW"))
            raw.append((c, p, 1, "WAR"))
    if plan.barrier:
        preds, succs = inst.preds(), inst.succs()
        firsts = [i for i in range(len(preds)) if not preds[i]]
        lasts = [i for i in range(len(succs)) if not succs[i]]
        raw += [(a, b, 1, "barrier") for a in lasts for b in firsts if thread[a] != thread[b]]
    order = Order(len(inst.subboxes), plan.threads, [(s, d, t) for s, d, t, _ in raw])
    for early, late in reuse_conflicts(inst, mem, prec):
        if thread[early] != thread[late] and not order.before(late, 0, early, 1):
            raw.append((late, early, 1, "reuse"))
            order.add_signal(late, early, 1)
    return _op_lists(plan, raw, order)


def _op_lists(plan: ThreadPlan, raw: list[tuple[int, int, int, str]], order: Order) -> Sync:
    waits: dict[int, list[int]] = {}
    posts: dict[int, list[int]] = {}
    rank = {"RAW": 0, "WAR": 1, "reuse": 1, "barrier": 2}
    for i, (src, dst, _t, _kind) in enumerate(raw):
        waits.setdefault(dst, []).append(i)
        posts.setdefault(src, []).append(i)
    # waits: RAW then WAR; posts: WAR then RAW (the appendix's order); then by the peer sub-box
    post_rank = {"WAR": 0, "reuse": 0, "RAW": 1, "barrier": 2}
    ops: list[list[tuple[str, int]]] = []
    for subs in plan.threads:
        lst: list[tuple[str, int]] = []
        for s in subs:
            lst += [("W", i) for i in sorted(waits.get(s, []), key=lambda i: (rank[raw[i][3]], raw[i][0], i))]
            lst.append(("E", s))
            lst += [("S", i) for i in sorted(posts.get(s, []), key=lambda i: (post_rank[raw[i][3]], raw[i][1], i))]
        ops.append(lst)
    # name signals s1, s2, ... in order of first appearance, thread by thread
    names: dict[int, str] = {}
    for lst in ops:
        for kind, i in lst:
            if kind != "E" and i not in names:
                names[i] = f"s{len(names) + 1}"
    index = {i: k for k, i in enumerate(sorted(names, key=lambda i: int(names[i][1:])))}
    signals = [Signal(names[i], *raw[i]) for i in sorted(names, key=index.__getitem__)]
    ops = [[(kind, i if kind == "E" else index[i]) for kind, i in lst] for lst in ops]
    return Sync(signals, ops, order)
