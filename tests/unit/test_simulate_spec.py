"""--noise SPEC parsing: every family, and one-line errors for bad input."""

from __future__ import annotations

import math

import pytest

from jitterscope.errors import JitterscopeError
from jitterscope.simulate.spec import DistributionNoise, FitNoise, PeriodicNoise, TraceNoise, parse_noise


def test_seed_004_normal():
    s = parse_noise("normal(mean=1.91ms,sd=0.36ms)")
    assert isinstance(s, DistributionNoise)
    assert s.delay.mean() == pytest.approx(1.91e-3)
    assert math.sqrt(s.delay.var()) == pytest.approx(0.36e-3)


@pytest.mark.parametrize(
    "text,mean",
    [
        ("exponential(mean=50us)", 50e-6),
        ("lognormal(mean=1ms, sd=0.5ms)", 1e-3),
        ("gamma(shape=2,scale=1ms)", 2e-3),
        ("gamma(mean=2ms,sd=1ms)", 2e-3),
        ("gamma(shape=4,mean=2ms)", 2e-3),
        ("weibull(shape=1,scale=3ms)", 3e-3),
        ("pareto(alpha=3,scale=100us)", 150e-6),
        ("bernoulli(p=0.01,delay=2ms)", 2e-5),
    ],
)
def test_families_and_their_means(text, mean):
    s = parse_noise(text)
    assert s.delay.mean() == pytest.approx(mean, rel=1e-9)


def test_lognormal_median_sigma():
    s = parse_noise("lognormal(median=1ms,sigma=0.5)")
    assert s.delay.mean() == pytest.approx(1e-3 * math.exp(0.125))


def test_periodic_run_and_fit():
    p = parse_noise("periodic(period=10ms,duration=25us)")
    assert isinstance(p, PeriodicNoise) and p.period_s == pytest.approx(0.01) and p.duration_s == pytest.approx(25e-6)
    assert isinstance(parse_noise("runs/quiet"), TraceNoise)
    f = parse_noise("fit:runs/quiet")
    assert isinstance(f, FitNoise) and str(f.path) == "runs/quiet"


@pytest.mark.parametrize(
    "text,words",
    [
        ("cauchy(loc=1ms)", "unknown noise family"),
        ("normal(mean=1ms)", "missing sd"),
        ("normal(mean=1ms,sd=-2ms)", "negative"),
        ("normal(mean=1ms,sd=2)", "needs a unit"),
        ("normal(mean=1ms,sd=2parsecs)", "unknown unit"),
        ("exponential(mean=0ms)", "positive"),
        ("gamma(shape=-1,scale=1ms)", "positive"),
        ("gamma(shape=2ms,scale=1ms)", "plain number"),
        ("bernoulli(p=1.5,delay=1ms)", "probability"),
        ("pareto(alpha=0.9,scale=1ms)", "alpha must exceed 1"),
        ("periodic(period=1ms,duration=2ms)", "shorter than its period"),
        ("normal(mean=1ms,sd=1ms,sd=2ms)", "twice"),
        ("normal(mean=1ms,width=2ms)", "no parameter"),
        ("normal", "give its parameters"),
        ("gaussian", "unknown noise family"),
        ("fit:", "needs a run directory"),
    ],
)
def test_bad_specs_are_one_line_errors(text, words):
    with pytest.raises(JitterscopeError) as err:
        parse_noise(text)
    msg = str(err.value)
    assert words in msg and "\n" not in msg
