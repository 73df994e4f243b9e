"""The measurement pipeline: probe + private kernel trace -> detours attributed to sources -> run directory.

lifecycle  check, journal, trace, probe, main loop, stop (the one entry point: `measure`)
probe      the native selfish-detour probe and its record format (probe_format)
inject     the synthetic daemon used as ground truth
build      raw capture -> Parquet tables -> summary.json
attribution, periodicity, summary   who took the time, how regularly, the per-CPU/per-source tables
render     the terminal summary
"""

from jitterscope.measure.lifecycle import MeasureOptions, measure, run_measurement

__all__ = ["MeasureOptions", "measure", "run_measurement"]
