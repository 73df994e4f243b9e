"""`jitterscope check`'s verdict and its one line: limits per CPU, baseline regressions, perfdata."""

from __future__ import annotations

import pytest

from jitterscope.check.render import render_line
from jitterscope.check.verdict import Limits, judge
from jitterscope.errors import UsageError
from jitterscope.units import parse_share


def summary(noise_ppm: dict[int, float], max_ns: float = 50_000.0, unexplained: float | None = 0.1) -> dict:
    return {
        "run": {"duration_s": 2.0, "tracing": unexplained is not None},
        "cpus": {
            str(c): {"noise_ppm": p, "detours": 100, "p99_ns": 20_000.0, "max_ns": max_ns} for c, p in noise_ppm.items()
        },
        "unexplained": None if unexplained is None else {"share": unexplained},
        "lost_events": 0,
    }


def test_every_cpu_over_a_limit_is_named_and_the_rest_pass() -> None:
    v = judge(summary({1: 5_000.0, 2: 30_000.0, 3: 9_000.0}), Limits(max_noise=0.01, max_detour_ns=100_000))
    assert not v.healthy and v.problems == ["CPU 2 noise 3% > 1%"]
    v = judge(summary({1: 5_000.0}, max_ns=2e6), Limits(max_noise=0.01, max_detour_ns=1e6))
    assert v.problems == ["CPU 1 detour 2 ms > 1 ms"]
    assert judge(summary({1: 5_000.0}), Limits(max_noise=0.01, max_p99_ns=20_000)).healthy  # equal is within


def test_unexplained_limit_needs_tracing() -> None:
    assert judge(summary({1: 1.0}, unexplained=0.5), Limits(max_unexplained=0.3)).problems == ["unexplained 50% > 30%"]
    v = judge(summary({1: 1.0}, unexplained=None), Limits(max_unexplained=0.3))
    assert v.healthy and v.notes == ["unexplained share not checked: the run was not traced"]


def test_baseline_regressions_make_it_unhealthy_and_are_named() -> None:
    comparison = {
        "runs": {"base": {"path": "/var/lib/jitterscope/baseline"}},
        "regressions": ["thread:stuckd (new, +200,000 ppm)"],
        "not_compared": [],
    }
    v = judge(summary({1: 210_000.0}), Limits(), comparison)
    assert not v.healthy and v.regressions == ["thread:stuckd (new, +200,000 ppm)"]
    line = render_line(v)
    assert line.startswith("JITTERSCOPE UNHEALTHY - CPU 1, 2 s: thread:stuckd (new, +200,000 ppm) vs baseline")
    assert line.endswith("regressions=1") and "\n" not in line


def test_healthy_line_shows_the_worst_cpu_and_perfdata_with_limits() -> None:
    v = judge(summary({1: 5_000.0, 2: 7_000.0}), Limits(max_noise=0.01))
    line = render_line(v)
    assert line.startswith("JITTERSCOPE OK - CPU 1-2, 2 s: noise 0.7% (CPU 2), worst detour 50 us")
    assert "| noise=0.7%;1 max_detour=5e-05s; p99=2e-05s; unexplained=10%; regressions=0" in line


@pytest.mark.parametrize(("text", "share"), [("1%", 0.01), ("2500ppm", 0.0025), (" 0.5 % ", 0.005), ("100%", 1.0)])
def test_share_values_need_their_unit(text: str, share: float) -> None:
    assert parse_share(text) == pytest.approx(share)


@pytest.mark.parametrize("text", ["1", "0.01", "5 percent", "-1%", "101%", ""])
def test_share_without_unit_or_out_of_range_is_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_share(text, "--max-noise")
