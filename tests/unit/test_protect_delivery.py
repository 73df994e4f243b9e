"""protect's delivery check: the progress ratio's interval covers as stated, blocks follow the phases, and a
shared CPU or an under-delivering actuator is said in the summary."""

from __future__ import annotations

import numpy as np
import pytest

from jitterscope.protect import records as rec
from jitterscope.protect.delivery import block_rates, delivery, ratio_interval


def test_the_interval_covers_the_true_ratio_at_its_level():
    """2,000 seeded experiments of 39 blocks a side: the 99% interval misses the true ratio about 1% of the time."""
    rng = np.random.default_rng(7)
    misses = 0
    for _ in range(2000):
        p = rng.normal(10.0, 1.5, 39)
        u = rng.normal(20.0, 2.0, 39)
        ci = ratio_interval(p, u, 0.99)
        assert ci is not None
        misses += not ci[0] <= 0.5 <= ci[1]
    # binomial(2000, 0.01): mean 20, sd 4.45; 5 sd either side
    assert 0 < misses <= 42, misses
    assert ratio_interval(np.ones(2), np.ones(5)) is None


def _samples(ts_ns: float, s_ns: float, rate: float, seconds: float, phase_ns: float) -> np.ndarray:
    """A controller's samples under persistent excess: protected phases (odd ones) run Ts then suspend S."""
    out, t = [], 0.0
    while t < seconds * 1e9:
        on = (t // phase_ns) % 2 == 1
        out.append((t, rec.S_ON if on else 0, rate * ts_ns, ts_ns))
        t += ts_ns + (s_ns if on else 0)
    return np.array(out, dtype=[("t_ns", "i8"), ("flags", "i4"), ("progress_bytes", "i8"), ("cpu_ns", "i8")])


def test_blocks_give_the_law_when_suspensions_are_exact():
    s = _samples(100e3, 900e3, 1.0, 1.6, 200e6)
    p, u = block_rates(s, 200e6, "progress_bytes")
    assert len(p) + len(u) == 78  # 80 blocks of 20 ms, less the first and the last
    ci = ratio_interval(p, u)
    assert ci is not None and ci[0] <= 0.1 <= ci[1] and ci[1] - ci[0] < 0.01


def _summary(off_share: float, ratio: float, suspension_mean: float, on_share: float = 0.1) -> dict:
    return {
        "phases": {
            "protected": {
                "best_effort": {"samples": 100, "over": 100, "cpu_share": on_share, "progress_bytes_per_s": 1}
            },
            "unprotected": {
                "best_effort": {"samples": 100, "over": 100, "cpu_share": off_share, "progress_bytes_per_s": 1}
            },
        },
        "expected_share": 0.5,
        "progress_ratio": ratio,
        "cpus": {"1": {"controller_cpu_share": 0.02, "suspension_ns": {"mean": suspension_mean}}},
        "controller": {"writer_cpu_share": 0.01},
        "suspend_ns": 500e3,
        "law": "fixed",
    }


def test_a_shared_cpu_and_an_under_delivery_are_said():
    s = _samples(500e3, 500e3, 1.0, 1.6, 200e6)
    alone = delivery(_summary(0.96, 0.49, 505e3), s, 200e6)
    assert alone is not None and not alone["shared"] and alone["within_tolerance"] and alone["note"] is None
    shared = delivery(_summary(0.45, 0.7, 505e3), s, 200e6)
    assert shared is not None and shared["shared"] and shared["within_tolerance"] is None
    assert shared["other_share"] == pytest.approx(0.52) and "the best-effort CPU was shared" in shared["note"]
    late = delivery(_summary(0.96, 0.40, 750e3), s, 200e6)
    assert late is not None and late["within_tolerance"] is False
    assert "suspensions lasted +250.0 us on average beyond the asked 500 us" in late["note"]
    # the law's CPU time, more progress per CPU-second when suspended: the programs', not the actuator's
    faster = delivery(_summary(0.96, 0.545, 500e3, on_share=0.48), s, 200e6)
    assert faster is not None and faster["within_tolerance"] is False and faster["cpu_ratio"] == pytest.approx(0.5)
    assert "gave them 0.500 of their unprotected CPU time" in faster["note"]
    assert "progress per CPU-second was +9.0% when suspended" in faster["note"]
    assert faster["cpu_ratio_ci"] is not None and faster["cpu_ratio_ci"][0] <= 0.5 <= faster["cpu_ratio_ci"][1]
    assert delivery({**_summary(0.96, 0.5, 5e5), "phases": {"protected": {}}}, s, None) is None
