"""jitterscope: find, explain, predict and remove OS jitter."""

from jitterscope.ownenv import limit_blas

limit_blas()  # before numpy is imported (ownenv.py says why)

__version__ = "0.1.0"
