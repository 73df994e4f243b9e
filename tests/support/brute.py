"""Brute-force reference: enumerate every combination of execution times.

Written from the definition, with none of the engine's machinery (no classes,
no cumulative profiles, no aggregation by phase): for each triggering a of C_0
in the hyper-period and each tuple (x_0, ..., x_{N-1}) of execution times, walk
the chain with integer arithmetic and add the product of the probabilities.
Exponential in the chain length; for tests on small chains only.
"""

from __future__ import annotations

import itertools
import math

from jitterscope.ptts.model import Model


def _next_trigger(t: int, period: int, offset: int) -> int:
    """First instant of {offset + n*period : n integer} at or after t."""
    n = math.ceil((t - offset) / period) if (t - offset) % period else (t - offset) // period
    return offset + n * period


def _path(model: Model, a: int, xs: tuple[int, ...]) -> list[int]:
    """Triggering instants T_0..T_{N-1} and the final output instant."""
    comps = model.components
    ts = [a]
    t = a
    for i, x in enumerate(xs):
        p = t + x
        if i + 1 < len(comps):
            t = _next_trigger(p, comps[i + 1].period, comps[i + 1].offset)
            ts.append(t)
        else:
            ts.append(p)
    return ts


def brute_force(model: Model, loss: bool = True) -> tuple[dict[int, float], float | None]:
    """(latency PMF in ticks, loss probability) by enumeration; loss as defined in exact.py."""
    comps = model.components
    d0, o0 = comps[0].period, comps[0].offset
    h = math.lcm(*(c.period for c in comps))
    n0 = h // d0
    supports = [list(zip(c.etp.support.tolist(), c.etp.prob.tolist())) for c in comps]
    pmf: dict[int, float] = {}
    total = 0.0
    for k in range(n0):
        a = o0 + k * d0
        paths = []
        for combo in itertools.product(*supports):
            xs = tuple(x for x, _ in combo)
            p = math.prod(q for _, q in combo)
            ts = _path(model, a, xs)
            lat = ts[-1] - a
            pmf[lat] = pmf.get(lat, 0.0) + p / n0
            paths.append((ts, p))
        if not loss:
            continue
        # the next frame, with its own independent execution times
        b = a + d0
        nxt = [
            (_path(model, b, tuple(x for x, _ in combo)), math.prod(q for _, q in combo))
            for combo in itertools.product(*supports)
        ]
        for ts, p in paths:
            for us, q in nxt:
                # consumed by the same triggering of some C_i, i >= 1
                if any(ts[i] == us[i] for i in range(1, len(comps))):
                    total += p * q / n0
    return pmf, (total if loss else None)
