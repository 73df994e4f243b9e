"""Monte Carlo simulation of a PTTS chain (`--method simulate`).

An independent, event-by-event implementation of the same system, kept simple
on purpose so it checks the exact engine rather than repeating it: integer
arithmetic on triggering instants, one execution time per triggering of every
component (drawn when that triggering first runs and shared by every frame it
handles, as in the real system), containers followed through one-place
buffers.

One iteration is one frame: a triggering of C_0 drawn uniformly from the
hyper-period, simulated together with its neighbours (the frames close enough
in time to meet it in a buffer) on a fresh timeline, so iterations are
independent and the Dvoretzky-Kiefer-Wolfowitz band applies to the empirical
CDF.  Per iteration it records

* the frame's latency: first consuming triggering at every component, as in
  the exact model (a frame that is overwritten still has the latency its
  container would have had);
* whether its container and the next frame's are consumed by the same
  triggering of some component (the exact engine's `loss`);
* whether it is overwritten by any simulated frame at all, consecutive or not
  (`loss_any`: every frame whose container is written to the same buffer
  between the same two triggerings and later).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from jitterscope import budget
from jitterscope.errors import JitterscopeError
from jitterscope.humanize import seconds
from jitterscope.ptts.etp import ETP
from jitterscope.ptts.exact import Chain, Distribution
from jitterscope.ptts.model import Model
from jitterscope.ptts.stats import empirical


@dataclass
class SimResult:
    iterations: int
    latency: Distribution
    loss: float  # adjacent collisions per frame
    loss_any: float  # frames overwritten by any frame, per frame
    seconds: float
    seed: int | None


class _Pool:
    """Execution times of one component, drawn in batches."""

    def __init__(self, etp: ETP, rng: np.random.Generator) -> None:
        self.etp, self.rng = etp, rng
        self.buf: list[int] = []
        self.pos = 0

    def draw(self) -> int:
        if self.pos >= len(self.buf):
            self.buf = self.etp.sample(self.rng, 4096).tolist()
            self.pos = 0
        x = self.buf[self.pos]
        self.pos += 1
        return x


CHUNK = 4096


def _pace(
    done: int,
    total: int,
    elapsed: float,
    progress: Callable[[float], None] | None,
    max_time_s: float | None,
    max_time_text: str,
) -> None:
    """After the first chunk: refuse a run whose estimated time exceeds the limit; report progress."""
    if done == CHUNK and max_time_s is not None:
        est = elapsed / done * total
        if est > max_time_s:
            raise JitterscopeError(
                f"simulating {total:,} frames would take ~{seconds(est)} here (measured on the first {done:,}), "
                f"over --max-time {max_time_text or seconds(max_time_s)}: use fewer --iterations or raise --max-time"
            )
    if progress is not None and done:
        progress(done / total)


def simulate(
    model: Model,
    iterations: int,
    seed: int | None = None,
    progress: Callable[[float], None] | None = None,
    max_time_s: float | None = None,
    max_time_text: str = "",
) -> SimResult:
    """`iterations` frames on fresh timelines.  Memory (two int64 per frame) is checked first;
    after the first CHUNK frames the whole run's time is estimated from them and refused over
    `max_time_s`; `progress` gets the fraction done."""
    budget.check(
        f"simulating {iterations:,} frames",
        iterations * 16.0,
        0.0,
        "use fewer --iterations",
    )
    t0 = time.perf_counter()
    ch = Chain.of(model)
    rng = np.random.default_rng(seed)
    n = ch.n
    d, o = ch.d, ch.o
    n0 = ch.trees
    d0, o0 = d[0], o[0]
    margin = max(1, ch.reach(0) // d0 + 1)
    pools = [_Pool(e, rng) for e in ch.etp]
    starts = rng.integers(0, n0, size=iterations)  # drawn first, as always: a seed gives the same frames
    lat = np.empty(iterations, dtype=np.int64)
    adjacent = 0
    overwritten = 0
    for c0 in range(0, iterations, CHUNK):
        _pace(c0, iterations, time.perf_counter() - t0, progress, max_time_s, max_time_text)
        for it, k in enumerate(starts[c0 : c0 + CHUNK].tolist(), c0):
            cache: list[dict[int, int]] = [{} for _ in range(n)]
            paths: dict[int, tuple[list[int], list[int]]] = {}
            for j in range(k - margin, k + margin + 1):
                t = o0 + j * d0
                trig = [t]
                prod = []
                for i in range(n):
                    x = cache[i].get(t)
                    if x is None:
                        x = pools[i].draw()
                        cache[i][t] = x
                    p = t + x
                    prod.append(p)
                    if i + 1 < n:
                        t = p + (o[i + 1] - p) % d[i + 1]
                        trig.append(t)
                paths[j] = (trig, prod)
            trig_k, prod_k = paths[k]
            lat[it] = prod_k[-1] - (o0 + k * d0)
            trig_n = paths[k + 1][0]
            if any(trig_k[i] == trig_n[i] for i in range(1, n)):
                adjacent += 1
            lost = False
            for i in range(1, n):
                for j, (tj, pj) in paths.items():
                    # a different container (not one already merged with k's) written later to the same slot
                    if (
                        j != k
                        and tj[i] == trig_k[i]
                        and tj[i - 1] != trig_k[i - 1]
                        and (pj[i - 1] > prod_k[i - 1] or (pj[i - 1] == prod_k[i - 1] and j > k))
                    ):
                        lost = True
                        break
                if lost:
                    break
            overwritten += lost
    return SimResult(
        iterations, empirical(lat), adjacent / iterations, overwritten / iterations, time.perf_counter() - t0, seed
    )
