"""jitterscope: find, explain, predict and remove OS jitter."""

__version__ = "0.1.0"
