"""`jitterscope whatif`: trace-driven what-if of the shared-memory jitter paper's hardware remedies
(DVFS jitter compensation, an OS cache with overflow sharing, prefetching, selective pinning)."""

# The controller's choices live here, not in controller.py, so that building the command line (which
# needs them for --help) does not import numpy.
TABLE_SPEC = "0.8:1.2:0.05"  # Table 3: factors 0.8 ... 1.2 of the 3 GHz / 1 V baseline
MODELS = ("paper", "physical")
QUANTIZE = ("nearest", "ceil")

__all__ = ["MODELS", "QUANTIZE", "TABLE_SPEC"]
