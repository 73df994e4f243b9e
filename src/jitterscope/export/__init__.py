"""Exports of a run for other tools: Perfetto/Chrome trace JSON, LogGOPSim noise traces, CSV."""

from jitterscope.export.csv_out import write_csv
from jitterscope.export.loggopsim import read_loggopsim, write_loggopsim
from jitterscope.export.perfetto import build_trace, write_perfetto

FORMATS = ("perfetto", "loggopsim", "csv")

__all__ = ["FORMATS", "build_trace", "read_loggopsim", "write_csv", "write_loggopsim", "write_perfetto"]
