"""Latency statistics of a pipeline run, as the thesis reports them (the thesis section 3.5).

Latency of an iteration = end of its last sub-box - its release (the start of
its first sub-box when iterations run back to back).  Jitter is the standard
deviation sigma of the latencies (the thesis's "variance (sigma)", L1350),
with Bessel's correction (ddof = 1); percentiles are numpy's linear
interpolation (Hyndman and Fan type 7).
"""

from __future__ import annotations

import numpy as np

from jitterscope.pipeline.results import Latency

KEYS = ("mean", "sd", "min", "p50", "p99", "p999", "max")


def latency_stats(latency_ns: np.ndarray) -> Latency:
    """n, mean, sd, min, p50, p99, p999 (99.9th percentile), max, in ns."""
    x = np.asarray(latency_ns, dtype=np.float64)
    if len(x) == 0:
        return {"n": 0, "mean": None, "sd": None, "min": None, "p50": None, "p99": None, "p999": None, "max": None}
    p50, p99, p999 = np.percentile(x, [50, 99, 99.9])
    return {
        "n": len(x),
        "mean": float(x.mean()),
        "sd": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
        "min": float(x.min()),
        "p50": float(p50),
        "p99": float(p99),
        "p999": float(p999),
        "max": float(x.max()),
    }


def fmt_us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:,.0f}" if ns >= 1e5 else f"{ns / 1e3:,.1f}"
