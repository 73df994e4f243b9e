"""A figure of a long run is no bigger than one of a short run: curves are drawn at a bounded number of points
(plotting.curve_ranks, plotting.envelope), the highest values and every spike kept."""

from __future__ import annotations

import numpy as np

from jitterscope import plotting
from jitterscope.pipeline.plots import latency_series
from jitterscope.simulate import plots as sim_plots
from jitterscope.simulate.fitting import fit_delays
from tests.support import svg


def test_short_curves_are_drawn_at_every_point():
    assert plotting.curve_ranks(5, points=10).tolist() == [0, 1, 2, 3, 4]
    assert plotting.curve_ranks(0).tolist() == []


def test_long_curves_keep_their_ends_and_their_tail():
    n, points, tail = 1_000_003, 500, 100
    k = plotting.curve_ranks(n, points, tail)
    assert k[0] == 0 and k[-1] == n - 1
    assert np.all(np.diff(k) > 0)  # ascending, no rank twice
    assert set(range(n - tail, n)) <= set(k.tolist())
    assert len(k) <= points + tail


def test_an_envelope_keeps_every_spike_at_its_height():
    rng = np.random.default_rng(3)
    y = rng.gamma(2.0, 10.0, 1_000_000)
    spikes = [17, 500_001, 999_999]
    y[spikes] = [5e4, 6e4, 7e4]
    first, lo, hi = plotting.envelope(y, points=1000)
    assert len(first) == 500 and first[0] == 0
    for s, v in zip(spikes, (5e4, 6e4, 7e4)):
        bucket = np.searchsorted(first, s, side="right") - 1
        assert hi[bucket] == v
    assert lo.min() == y.min()
    assert plotting.envelope(np.zeros(0))[0].size == 0


def _latency_svg(n: int) -> str:
    y = np.random.default_rng(1).gamma(2.0, 1000.0, n)
    y[n // 3] = 5e6
    fig = latency_series(y, "latency")
    assert fig.axes[0].get_ylim()[1] >= 5e3  # the spike (5 ms, drawn in us) is inside the axes
    return plotting.svg_text(fig)


def test_a_latency_series_ten_times_as_long_draws_the_same_figure():
    short, long = _latency_svg(50_000), _latency_svg(500_000)
    # a line through every point: one <path> either way, ten times the vertices (2.4 MB against 0.25 MB)
    assert abs(len(long) - len(short)) < 0.02 * len(short)
    assert svg.read(long).marks == svg.read(short).marks
    assert svg.read(long).shows("min-max per bucket")


def test_a_qq_plot_draws_a_bounded_number_of_points(tmp_path):
    rng = np.random.default_rng(2)
    fit = fit_delays(rng.lognormal(np.log(20e-6), 0.5, 20_000), 1e-3, replicates=5)
    sim_plots.fit_plots(fit, tmp_path)
    qq = svg.read(tmp_path / "fit_qq.svg")
    panels = len(fit.families) + (1 if fit.tail else 0)
    # each panel: its points (one <use> each) at most, and a few dozen axis and frame marks
    assert qq.marks <= panels * (sim_plots.QQ_POINTS + sim_plots.QQ_TAIL + 60)
    assert qq.marks >= panels * sim_plots.QQ_POINTS
