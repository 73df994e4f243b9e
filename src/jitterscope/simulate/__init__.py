"""Predict what noise costs a bulk-synchronous job at scale (`jitterscope simulate`),
fit per-phase delay distributions (`jitterscope fit`), and rank sources by the
slowdown their removal saves (`simulate --by-source`).

Importable as a library; see `engine` for the entry points.
"""

from jitterscope.simulate.engine import by_source, check_trace_size, fit_run, simulate, trace_cost
from jitterscope.simulate.fitting import Fit, fit_delays
from jitterscope.simulate.job import Job, Result, Simulation, mean_ci95
from jitterscope.simulate.orderstats import expected_max, max_moments, sample_max
from jitterscope.simulate.spec import parse_noise
from jitterscope.simulate.timeline import Timeline, periodic_timeline

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
