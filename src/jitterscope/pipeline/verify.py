"""The safety check every schedule passes before it runs (compiled or written by hand).

1. Every sub-box runs exactly once per iteration; every signal is posted by one
   sub-box and waited for by one.
2. No deadlock: the program orders and the signals without an initial token
   form no cycle (a cycle of the steady-state graph without a token never fires).
3. Memory: every buffer lies inside the pool and has the image's size.
4. Data: for every dependency the producer of iteration k runs before its
   consumer of iteration k, and that consumer before the producer of k+1.
   Two buffers sharing bytes never live at once in an iteration (one's
   accesses all happen before the other's), and the later one's accesses of
   iteration k happen before the earlier one's of iteration k+1.

Any failure is one line naming the schedule and what is wrong, exit code 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jitterscope.errors import UsageError
from jitterscope.pipeline.memory import buffer_accessors, precedes
from jitterscope.pipeline.order import Order
from jitterscope.pipeline.sync import reuse_conflicts

if TYPE_CHECKING:
    from jitterscope.pipeline.compiler import Schedule


class ScheduleError(UsageError):
    """A schedule that is inconsistent, unsafe or for another graph."""


def verify(sched: Schedule, source: str = "schedule") -> None:
    inst, mem = sched.inst, sched.memory
    n = len(inst.subboxes)
    names = [s.name for s in inst.subboxes]
    seen = [0] * n
    for subs in sched.threads:
        for s in subs:
            seen[s] += 1
    for s in range(n):
        if seen[s] != 1:
            raise ScheduleError(f"{source}: sub-box {names[s]} runs {seen[s]} times per iteration (must be once)")
    try:
        order = Order(n, sched.threads, [(g.src, g.dst, g.tokens) for g in sched.signals])
    except ValueError:
        raise ScheduleError(
            f"{source}: deadlock: the threads' orders and the signals without an initial token form a cycle"
        ) from None
    size = inst.graph.buffer_bytes
    for b, buf in enumerate(inst.graph.buffers):
        lo, hi = mem.range(b)
        if mem.sizes[b] != size or lo < 0 or hi > mem.total:
            raise ScheduleError(
                f"{source}: buffer {buf.name} at [{lo}, {hi}) does not fit a {size}-byte image "
                f"in the {mem.total}-byte pool"
            )
    for p, c in inst.edges:
        if not order.before(p, 0, c, 0):
            raise ScheduleError(f"{source}: {names[c]} may read before {names[p]} has written (missing signal)")
        if not order.before(c, 0, p, 1):
            raise ScheduleError(
                f"{source}: {names[p]} of the next iteration may overwrite what {names[c]} "
                f"still reads (missing signal with a token)"
            )
    anc = order.ancestors0()
    prec = precedes(buffer_accessors(inst), anc)
    bufs = inst.graph.buffers
    for x in range(len(bufs)):
        for y in range(x + 1, len(bufs)):
            if mem.overlap(x, y) and not prec[x][y] and not prec[y][x]:
                raise ScheduleError(
                    f"{source}: buffers {bufs[x].name} and {bufs[y].name} share memory but can be live at the same time"
                )
    for early, late in reuse_conflicts(inst, mem, prec):
        if not order.before(late, 0, early, 1):
            raise ScheduleError(
                f"{source}: {names[early]} of the next iteration may overwrite memory "
                f"{names[late]} still uses (missing signal with a token)"
            )
