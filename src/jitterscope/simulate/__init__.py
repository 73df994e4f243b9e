"""Predict what noise costs a bulk-synchronous job at scale (`jitterscope simulate`),
fit per-phase delay distributions (`jitterscope fit`), and rank sources by the
slowdown their removal saves (`simulate --by-source`).

Importable as a library; see `engine` for the entry points.  The names below are imported
when first used (PEP 562): the engine brings scipy.stats, about 2 s here, which a module
that needs only `simulate.timeline` or `simulate.results` (each rank of `cluster bsp`, the
report of a cluster run) must not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jitterscope import lazy

if TYPE_CHECKING:
    from jitterscope.simulate.engine import by_source, check_trace_size, fit_run, simulate, trace_cost
    from jitterscope.simulate.fitting import Fit, fit_delays
    from jitterscope.simulate.job import Job, Result, Simulation, mean_ci95
    from jitterscope.simulate.orderstats import expected_max, max_moments, sample_max
    from jitterscope.simulate.spec import parse_noise
    from jitterscope.simulate.timeline import Timeline, periodic_timeline

_HOME = {
    "by_source": "engine",
    "check_trace_size": "engine",
    "fit_run": "engine",
    "simulate": "engine",
    "trace_cost": "engine",
    "Fit": "fitting",
    "fit_delays": "fitting",
    "Job": "job",
    "Result": "job",
    "Simulation": "job",
    "mean_ci95": "job",
    "expected_max": "orderstats",
    "max_moments": "orderstats",
    "sample_max": "orderstats",
    "parse_noise": "spec",
    "Timeline": "timeline",
    "periodic_timeline": "timeline",
}

__all__ = [
    "Fit",
    "Job",
    "Result",
    "Simulation",
    "Timeline",
    "by_source",
    "check_trace_size",
    "expected_max",
    "fit_delays",
    "fit_run",
    "max_moments",
    "mean_ci95",
    "parse_noise",
    "periodic_timeline",
    "sample_max",
    "simulate",
    "trace_cost",
]


__getattr__, __dir__ = lazy.exports(__name__, _HOME)
