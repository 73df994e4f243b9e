import numpy as np

from jitterscope.measure.periodicity import detect_period


def test_regular_occurrences_with_jitter_and_misses_give_the_period():
    rng = np.random.default_rng(1)
    k = np.arange(200)
    k = k[rng.random(200) > 0.2]  # a fifth missed
    t = 3e6 + k * 4e6 + rng.normal(0, 2e4, len(k))  # 4 ms tick, 20 us jitter
    assert abs(detect_period(t) - 4e-3) < 4e-3 * 1e-3


def test_bursts_of_detours_per_wakeup_still_give_the_wakeup_period():
    base = np.arange(30) * 10e9
    t = np.sort(np.concatenate([base, base + 3e3, base + 9e3]))
    assert abs(detect_period(t) - 10.0) < 1e-6


def test_random_occurrences_are_not_periodic():
    rng = np.random.default_rng(2)
    t = np.cumsum(rng.exponential(1e6, 300))
    assert detect_period(t) is None


def test_too_few_occurrences_are_not_periodic():
    assert detect_period(np.array([0.0, 1e9, 2e9])) is None
