"""Probabilistic Time-Triggered Systems: exact end-to-end latency of chains of time-triggered components.

The thesis, chapter 5.  `model` reads the model file, `exact` computes the latency
distribution and the frame-loss probability over one hyper-period, `simulate`
is an independent Monte Carlo of the same system, `approx` adapts periods to
shorten the hyper-period (section 5.7), `plots` draws the figures; the tests'
brute-force reference is tests/support/brute.py.  The command is
`jitterscope ptts` (commands/ptts.py); the model file is documented in
docs/commands/ptts.md.
"""

from jitterscope.ptts.exact import Distribution, Result, analyse, estimate, latency_tree, predicted_work
from jitterscope.ptts.model import ETP, Component, Model, ModelError, load_model, model_from_dict

__all__ = [
    "Component",
    "Distribution",
    "ETP",
    "Model",
    "ModelError",
    "Result",
    "analyse",
    "estimate",
    "latency_tree",
    "load_model",
    "model_from_dict",
    "predicted_work",
]
