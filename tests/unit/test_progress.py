"""Progress without a terminal prints a plain line every few seconds; the first ETA is not wild."""

from __future__ import annotations

import io

import pytest

from jitterscope import progress as P


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(P.time, "monotonic", c)
    return c


def test_a_log_gets_a_plain_line_every_few_seconds(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()  # not a terminal
    monkeypatch.setattr(P.sys, "stderr", err)
    bar = P.Progress("simulate", 100.0)
    for step in range(1, 101):  # 100 steps of 0.2 s: 20 s of work
        clock.t += 0.2
        bar.update(step)
    lines = err.getvalue().splitlines()
    assert 3 <= len(lines) <= 5 and all("\r" not in x and "\x1b" not in x for x in lines)
    assert lines[0].startswith("simulate: ") and "% (" in lines[0] and "left" in lines[0]


def test_short_work_says_nothing_in_a_log(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(P.sys, "stderr", err)
    bar = P.Progress("fit", 10.0)
    for step in range(1, 11):
        clock.t += 0.1
        bar.update(step)
    bar.close()
    assert err.getvalue() == ""


def test_first_eta_ignores_set_up_and_waits_for_a_rate(clock: Clock) -> None:
    bar = P.Progress("simulate", 1.0, enabled=False)
    clock.t += 60.0  # a minute of set-up before the first report
    bar._first = (clock.t, 1e-5)
    assert bar.eta_s(1e-5) is None  # no rate yet: no estimate (was ~218,000 s)
    clock.t += 2.0
    eta = bar.eta_s(0.1 + 1e-5)
    assert eta == pytest.approx(18.0, rel=0.01)  # 10% in 2 s: 18 s left


def test_a_fixed_duration_knows_its_end(clock: Clock) -> None:
    bar = P.Progress("measuring", 30.0, unit="s", exact=True)
    assert bar.eta_s(12.0) == 18.0


def test_the_last_line_says_done_not_zero_left(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(P.sys, "stderr", err)
    bar = P.Progress("fit", 1.0)
    for step in range(1, 11):  # 10 steps of 1 s
        clock.t += 1.0
        bar.update(step / 10)
    last = err.getvalue().splitlines()[-1]
    assert last == "fit: 100%, done", err.getvalue()


def test_fit_reports_its_bootstrap_to_the_end() -> None:
    import numpy as np

    from jitterscope.simulate import fit_delays

    for n in (300, 40):  # with a tail to test, and too few delays for one
        seen: list[float] = []
        fit_delays(np.random.default_rng(1).lognormal(np.log(5e-6), 0.4, n), 1e-3, replicates=19, progress=seen.append)
        assert seen and seen == sorted(seen) and seen[-1] == pytest.approx(1.0), (n, seen)
