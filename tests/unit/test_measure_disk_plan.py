"""A measurement plan is refused up front only when the disk cannot hold its estimated capture."""

from __future__ import annotations

import pytest

from jitterscope import budget
from jitterscope.errors import JitterscopeError
from jitterscope.measure.lifecycle import MeasureOptions, capture_bytes, validate


def _plan_for(fraction_of_free: float, out, trace: bool = True) -> MeasureOptions:
    per_s = capture_bytes(1.0, 1, trace)
    return MeasureOptions(cpus=[0], duration_ns=fraction_of_free * budget.disk_free(out) / per_s * 1e9, trace=trace)


def test_a_plan_that_fits_the_disk_is_accepted(tmp_path):
    validate(_plan_for(0.5, tmp_path / "run"), tmp_path / "run")
    validate(_plan_for(0.5, tmp_path / "run", trace=False), tmp_path / "run")


def test_a_plan_the_disk_cannot_hold_is_refused_with_the_estimate(tmp_path):
    out = tmp_path / "run"
    opts = _plan_for(1.05, out)
    with pytest.raises(JitterscopeError) as e:
        validate(opts, out)
    msg = str(e.value)
    assert "\n" not in msg
    assert "measuring 1 CPU for" in msg and "with tracing" in msg
    assert f"would write ~{budget._size(capture_bytes(opts.duration_ns / 1e9, 1, True))}" in msg
    assert f"free where it goes ({out})" in msg and "--duration" in msg


def test_an_hour_is_estimated_per_cpu_and_second():
    hour = capture_bytes(3600, 1, True)
    assert capture_bytes(3600, 64, True) == 64 * hour
    assert capture_bytes(3600, 1, False) < hour / 50  # the probe's detours alone are small


def test_disk_free_of_a_path_not_yet_created_is_its_parents(tmp_path):
    assert budget.disk_free(tmp_path / "a" / "b") == budget.disk_free(tmp_path)
