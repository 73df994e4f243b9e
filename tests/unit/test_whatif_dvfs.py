"""whatif dvfs: the controller against the spec's validation table (A.7), its properties and the power
arithmetic (the replay, native, is tested in tests/integration/test_whatif_replay.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jitterscope.errors import UsageError
from jitterscope.whatif.controller import Controller, energy, parse_table, relative_power, step

TAU0 = 330_000.0
US = 1000.0

# The spec's controller validation table (A.7), the paper's published numbers our controller must reproduce:
# (J us, k, target tau us, raw factor, chosen nearest, chosen ceil, J after nearest, J after ceil)
CONTROLLER = [
    (0, 1, 330.0, 1.000, 1.0, 1.0, 0.0, 0.0),
    (33, 1, 297.0, 1.111, 1.1, 1.15, 3.0, -10.0),
    (33, 2, 313.5, 1.053, 1.05, None, 17.3, None),
    (100, 1, 230.0, 1.435, 1.2, 1.2, 45.0, 45.0),
    (100, 4, 305.0, 1.082, 1.1, None, None, None),
    (-20, 1, 350.0, 0.943, 0.95, None, None, None),
    (-100, 1, 430.0, 0.767, 0.8, 0.8, None, None),
]


@pytest.mark.parametrize("row", CONTROLLER, ids=[f"J{r[0]}k{r[1]}" for r in CONTROLLER])
def test_controller_golden_table(row):
    j, k, target, raw, nearest, ceil, after_n, after_c = row
    for q, chosen, after in (("nearest", nearest, after_n), ("ceil", ceil, after_c)):
        c = Controller(k=k, quantize=q, transition_ns=0)
        assert TAU0 - j * US / k == pytest.approx(target * US)
        assert c.raw_factor(TAU0, j * US) == pytest.approx(raw, abs=5e-4)
        if chosen is None:
            continue
        f, j_after = step(c, TAU0, j * US)
        assert f == pytest.approx(chosen)
        if after is not None:
            assert j_after / US == pytest.approx(after, abs=0.05)


def test_ceil_rows_the_spec_leaves_open_are_the_next_entry_up():
    assert Controller(k=2, quantize="ceil").choose(TAU0, 33 * US) == pytest.approx(1.1)
    assert Controller(k=1, quantize="ceil").choose(TAU0, -20 * US) == pytest.approx(0.95)


@pytest.mark.parametrize("q", ["nearest", "ceil"])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_monotone_in_jitter(q, k):
    c = Controller(k=k, quantize=q)
    fs = [c.choose(TAU0, j * US) for j in np.linspace(-400, 400, 801)]
    assert all(a <= b for a, b in zip(fs, fs[1:]))
    assert fs[0] == pytest.approx(0.8) and fs[-1] == pytest.approx(1.2)  # clamped and saturated


def test_no_jitter_exact_model_stays_nominal():
    for model in ("paper", "physical"):
        c = Controller(model=model, alpha=0.6)
        j, f = 0.0, 1.0
        for _ in range(100):
            f, j = step(c, TAU0, j, previous=f)
            assert f == 1.0 and j == 0.0


def test_transition_stall_is_paid_in_the_jitter_count():
    f, j = step(Controller(transition_ns=10 * US), TAU0, 33 * US)
    assert f == pytest.approx(1.1) and j / US == pytest.approx(13.0, abs=0.05)


def test_physical_model_needs_more_frequency_for_the_same_catch_up():
    paper_f = Controller(model="paper").raw_factor(TAU0, 33 * US)
    phys_f = Controller(model="physical", alpha=0.5).raw_factor(TAU0, 33 * US)
    assert phys_f > paper_f
    assert Controller(model="physical", alpha=0.5).raw_factor(TAU0, 200 * US) == math.inf  # memory time can't shrink


def test_power_arithmetic():
    assert relative_power(np.array([1.2, 1.0]), np.array([1.0, 3.0])) == pytest.approx((1.728 + 3) / 4)
    assert energy(np.array([1.2]), np.array([275.0])) == pytest.approx(1.728 * 275)


@pytest.mark.parametrize("text", ["0.8:1.2:0", "1.1,1.2", "abc", "0.8:0.95:0.05", "-1,1"])
def test_bad_tables(text):
    with pytest.raises(UsageError):
        parse_table(text)


def test_table3():
    assert list(parse_table("0.8:1.2:0.05")) == pytest.approx([0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15, 1.2])
