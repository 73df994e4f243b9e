"""The measurement pipeline: probe + private kernel trace -> detours attributed to sources -> run directory.

lifecycle  check, then the session (session.py) with measure's steps (the one entry point: `measure`)
steps      the probe and its main loop, stop, analysis: measure's steps of the session lifecycle
probe      the native selfish-detour probe and its record format (probe_format)
inject     the synthetic daemon used as ground truth
build      raw capture -> Parquet tables -> summary.json
attribution, periodicity, summary   who took the time, how regularly, the per-CPU/per-source tables
render     the terminal summary
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jitterscope.measure.lifecycle import MeasureOptions, measure, run_measurement

__all__ = ["MeasureOptions", "measure", "run_measurement"]


def __getattr__(name: str) -> Any:
    # Lazy: looking up the measure run kind (measure/kind.py) must not import the whole lifecycle.
    if name in __all__:
        from jitterscope.measure import lifecycle

        return getattr(lifecycle, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
