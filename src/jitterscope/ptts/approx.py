"""Shorter hyper-periods by adapting periods (the thesis, section 5.7).

The analysis time grows with the hyper-period (thesis eq. 5.15), and a
hyper-period is long when the periods share few factors (66.66, 16.66 and
16.67 ms: 1,388,611 latency trees).  Moving each period to a multiple of a
coarser grid g makes them share the factor g and shortens the hyper-period,
the way the thesis's configurations c -> b -> a do (1,388,611 -> 13,861 -> 136
trees).  `adapt_periods` takes the finest grid g (in ticks) for which the
predicted analysis time fits the budget, moving every period to the nearest
multiple of g and never by more than it has to:

* periods that were equal stay equal, and periods that differed stay
  different and in the same order: two clocks that drift against each other
  (16.66 and 16.67 ms) must keep drifting, or every relative phase but one
  disappears from the analysis and the distribution changes shape;
* a period is never made 0 or negative;
* among the grids that fit, the one that distorts least wins: the larger of
  the biggest period change and the coarsest step of the relative phases of
  consecutive components (gcd of their periods; see `phase_steps`).  Rounding
  66.66 ms to 66.64 = 4 x 16.66 ms would lock the sensor to the GPU's clock
  and leave one relative phase of 833; the distortion measure rejects it.

The change of every period (absolute and relative) is reported; the resulting
error of the distribution is measured by the caller against the exact result
of the original model when that is affordable, otherwise against a Monte Carlo
simulation of the original model (see commands/ptts.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from jitterscope.ptts import exact
from jitterscope.ptts.etp import ModelError
from jitterscope.ptts.model import Model


@dataclass
class Adaptation:
    grid: int  # ticks; 1 = no change
    periods: list[int]  # adapted periods, ticks
    original: list[int]
    estimate: exact.Estimate
    original_estimate: exact.Estimate

    @property
    def changed(self) -> bool:
        return self.periods != self.original

    def describe(self, model: Model) -> str:
        """One line: which periods moved where, and what that buys."""
        if not self.changed:
            return "approximate: the periods need no change (the exact analysis already fits the budget)"
        parts = [
            f"{c.name} {model.fmt(old)} -> {model.fmt(new)} ({(new - old) / old * 1e6:+.0f} ppm)"
            for c, old, new in zip(model.components, self.original, self.periods)
            if old != new
        ]
        names = [c.name for c in model.components]
        steps = [
            f"{b} against {a} every {model.fmt(s0)} -> {model.fmt(s1)}"
            for a, b, s0, s1 in zip(names, names[1:], phase_steps(self.original), phase_steps(self.periods))
        ]
        return (
            f"approximate (thesis 5.7): periods moved to multiples of {model.fmt(self.grid)}: "
            + "; ".join(parts)
            + f"; latency trees {self.original_estimate.trees:,} -> {self.estimate.trees:,}, predicted time "
            f"{self.original_estimate.seconds:.3g} s -> {self.estimate.seconds:.3g} s; relative phases: "
            + "; ".join(steps)
        )


def _round_preserving(periods: list[int], g: int) -> list[int]:
    """Multiples of g as close as possible (least total change) to the periods, keeping the order
    relation (<, =, >) among the original periods, none below g."""
    distinct = sorted(set(periods))
    m = len(distinct)
    # candidates: multiples of g around each period; a small DP over strictly increasing choices
    cands = []
    for p in distinct:
        base = p // g
        cands.append(sorted({max(1, base + k) * g for k in range(-m - 1, m + 2)}))
    INF = float("inf")
    cost = [[INF] * len(c) for c in cands]
    back = [[-1] * len(c) for c in cands]
    for a, r in enumerate(cands[0]):
        cost[0][a] = abs(r - distinct[0])
    for j in range(1, m):
        for b, r in enumerate(cands[j]):
            best, arg = INF, -1
            for a, r0 in enumerate(cands[j - 1]):
                if r0 < r and cost[j - 1][a] < best:
                    best, arg = cost[j - 1][a], a
            if arg >= 0:
                cost[j][b] = best + abs(r - distinct[j])
                back[j][b] = arg
    b = min(range(len(cands[-1])), key=lambda i: cost[-1][i])
    chosen = [0] * m
    for j in range(m - 1, -1, -1):
        chosen[j] = cands[j][b]
        b = back[j][b]
    rounded = dict(zip(distinct, chosen))
    return [rounded[p] for p in periods]


def phase_steps(periods: list[int]) -> list[int]:
    """Step of the relative phases two consecutive components take over the hyper-period: gcd(d_i, d_{i+1}).

    C_{i+1} sees the triggerings of C_i at phases o_i + k*d_i modulo d_{i+1}: a lattice of step
    gcd(d_i, d_{i+1}).  Two clocks that drift slowly (66.66 against 4 x 16.66 ms) have a fine lattice;
    commensurate periods (66.64 = 4 x 16.66) collapse it to one phase and change the distribution.
    """
    return [math.gcd(a, b) for a, b in zip(periods, periods[1:])]


def distortion(original: list[int], adapted: list[int]) -> tuple[int, int]:
    """(worst of the largest period change and the coarsest phase step, total change), in ticks."""
    change = [abs(a - o) for a, o in zip(adapted, original)]
    steps = phase_steps(adapted)
    return max(change + steps + [0]), sum(change)


def _grids(limit: int) -> Iterator[int]:
    g = 2
    while g <= limit:
        yield g
        g = g + 1 if g < 1000 else int(g * 1.02) + 1


def adapt_periods(model: Model, budget_s: float, max_grid: int | None = None, max_bytes: int = 8 * 2**30) -> Adaptation:
    """Move the periods to multiples of a grid so the analysis fits the budget, distorting least.

    Among the grids g whose least-change rounding fits the budget, the one with the smallest
    `distortion` wins: the larger of the biggest period change and the coarsest relative-phase step
    (both bounded below by g/2 and g, so the search stops once g exceeds the best found).
    """
    orig = model.periods
    est0 = exact.estimate(model)

    def fits(e: exact.Estimate) -> bool:
        return e.seconds <= budget_s and e.peak_bytes <= max_bytes

    if fits(est0):
        return Adaptation(1, list(orig), list(orig), est0, est0)
    limit = max_grid or max(2, min(orig))
    best: Adaptation | None = None
    best_key: tuple[int, int] | None = None
    for g in _grids(limit):
        if best_key is not None and g > best_key[0]:
            break
        new = _round_preserving(orig, g)
        key = distortion(orig, new)
        if best_key is not None and key >= best_key:
            continue
        est = exact.estimate(model.with_periods(new))
        if fits(est):
            best, best_key = Adaptation(g, new, list(orig), est, est0), key
    if best is None:
        raise ModelError(
            f"component {model.components[0].name!r}: field period: no adaptation of the periods "
            f"to a grid up to {limit} ticks brings the analysis under {budget_s:g} s"
        )
    return best
