"""Shorter hyper-periods by adapting periods (seed 003, section 5.7).

The analysis time grows with the hyper-period (seed eq. 5.15), and a
hyper-period is long when the periods share few factors (66.66, 16.66 and
16.67 ms: 1,388,611 latency trees).  Moving each period to a multiple of a
coarser grid g makes them share the factor g and shortens the hyper-period,
the way the seed's configurations c -> b -> a do (1,388,611 -> 13,861 -> 136
trees).  `adapt_periods` takes the finest grid g (in ticks) for which the
predicted analysis time fits the budget, moving every period to the nearest
multiple of g and never by more than it has to:

* periods that were equal stay equal, and periods that differed stay
  different and in the same order: two clocks that drift against each other
  (16.66 and 16.67 ms) must keep drifting, or every relative phase but one
  disappears from the analysis and the distribution changes shape;
* a period is never made 0 or negative.

The change of every period (absolute and relative) is reported; the resulting
error of the distribution is measured by the caller against the exact result
of the original model when that is affordable, otherwise against a Monte Carlo
simulation of the original model (see commands/ptts.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterscope.ptts import exact
from jitterscope.ptts.model import Model


@dataclass
class Adaptation:
    grid: int                 # ticks; 1 = no change
    periods: list[int]        # adapted periods, ticks
    original: list[int]
    estimate: exact.Estimate
    original_estimate: exact.Estimate

    @property
    def changed(self) -> bool:
        return self.periods != self.original


def _round_preserving(periods: list[int], g: int) -> list[int]:
    """Nearest multiples of g, keeping the order relation (<, =, >) among the original periods."""
    distinct = sorted(set(periods))
    rounded: dict[int, int] = {}
    prev = 0
    for p in distinct:
        r = max(g, (p + g // 2) // g * g)
        if r <= prev:          # keep strictly increasing over the distinct originals
            r = prev + g
        rounded[p] = r
        prev = r
    # a second pass downward where rounding up collided and going down is closer
    return [rounded[p] for p in periods]


def adapt_periods(model: Model, budget_s: float, max_grid: int | None = None) -> Adaptation:
    orig = model.periods
    est0 = exact.estimate(model)
    if est0.seconds <= budget_s:
        return Adaptation(1, list(orig), list(orig), est0, est0)
    limit = max_grid or max(1, min(orig))
    best = None
    g = 2
    while g <= limit:
        new = _round_preserving(orig, g)
        cand = model.with_periods(new)
        est = exact.estimate(cand)
        if est.seconds <= budget_s:
            best = Adaptation(g, new, list(orig), est, est0)
            break
        # skip grids that cannot help: try the next integer, then grow faster once far out
        g = g + 1 if g < 100 else int(g * 1.05) + 1
    if best is None:
        from jitterscope.ptts.model import ModelError

        raise ModelError(f"component {model.components[0].name!r}: field period: no adaptation of the periods "
                         f"to a grid up to {limit} ticks brings the analysis under {budget_s:g} s")
    return best
