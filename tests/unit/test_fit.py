"""Distribution fitting: maximum-likelihood parameters, goodness-of-fit statistics
against scipy's, bootstrap p-values that accept the true family and reject wrong
ones, and the plain "no family fits" verdict."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from jitterscope.errors import JitterscopeError
from jitterscope.simulate import fit_delays, fit_run
from jitterscope.simulate.fitting import GAMMA_UPPER_FROM, _draw, _fit_gamma, _fit_weibull, _logs, gof_statistics
from tests.support.noise_runs import Source, write_noise_run


def test_mle_matches_scipy():
    rng = np.random.default_rng(1)
    x = rng.gamma(2.5, 1e-3, 3000)
    k, _, scale = stats.gamma.fit(x, floc=0)
    p = _fit_gamma(x[None])
    assert p["shape"][0] == pytest.approx(k, rel=1e-6) and p["scale"][0] == pytest.approx(scale, rel=1e-6)
    y = rng.weibull(0.7, 3000) * 1e-3
    c, _, s = stats.weibull_min.fit(y, floc=0)
    q = _fit_weibull(y[None])
    assert q["shape"][0] == pytest.approx(c, rel=1e-3) and q["scale"][0] == pytest.approx(s, rel=1e-3)


def test_ks_and_ad_statistics_match_scipy():
    rng = np.random.default_rng(2)
    x = rng.normal(5.0, 2.0, 400)
    p = {"mean": np.array([5.1]), "sd": np.array([1.9])}
    ks, ad = gof_statistics("normal", p, x[None])
    assert ks[0] == pytest.approx(stats.kstest(x, stats.norm(5.1, 1.9).cdf).statistic, rel=1e-12)
    # scipy's uses the fitted mean and sd (ddof=1)
    ref_ad = stats.anderson(x, "norm", method="interpolate").statistic
    p2 = {"mean": np.array([x.mean()]), "sd": np.array([x.std(ddof=1)])}
    assert gof_statistics("normal", p2, x[None])[1][0] == pytest.approx(ref_ad, rel=1e-9)


def _weibull_40_steps(x: np.ndarray) -> dict[str, np.ndarray]:
    """The Weibull fit as it was: 40 Newton steps whatever the convergence."""
    top = x.max(1, keepdims=True)
    ly = np.log(x / top)
    mean_ly, sd = ly.mean(1), ly.std(1)
    k = np.where(sd > 0, np.pi / (np.sqrt(6) * np.maximum(sd, 1e-300)), 1.0)
    for _ in range(40):
        yk = np.exp(k[:, None] * ly)
        s0, s1, s2 = yk.sum(1), (yk * ly).sum(1), (yk * ly * ly).sum(1)
        new = k - (s1 / s0 - 1 / k - mean_ly) / ((s2 * s0 - s1 * s1) / (s0 * s0) + 1 / (k * k))
        k = np.where(new > 0, new, k / 2)
    return {"shape": k, "scale": top[:, 0] * np.exp(k[:, None] * ly).mean(1) ** (1 / k)}


@pytest.mark.parametrize("rows", ["delays", "with a constant row"])
def test_weibull_stops_where_forty_steps_would_have_converged(rows):
    """The Weibull's Newton steps stop once converged: the shapes and scales of the 40 steps it used to take,
    to rounding, for every row of a batch (a bootstrap's), samples of several families and shapes."""
    rng = np.random.default_rng(11)
    x = np.concatenate(
        [rng.weibull(c, (6, 500)) * 3e-6 for c in (0.3, 0.8, 2.0, 6.0)]
        + [rng.lognormal(np.log(5e-6), 1.5, (6, 500)), rng.exponential(1e-5, (6, 500))]
    )
    if rows == "with a constant row":
        x[3] = 4e-6  # no spread: its shape doubles at every step, so the batch runs all 40
    got, want = _fit_weibull(x), _weibull_40_steps(x)
    for key in ("shape", "scale"):
        assert np.array_equal(np.isfinite(got[key]), np.isfinite(want[key]))
        ok = np.isfinite(want[key])
        assert np.allclose(got[key][ok], want[key][ok], rtol=1e-13, atol=0), key


@pytest.mark.parametrize("shape", [0.05, 0.6, 2.5, 51.3, 400.0])
def test_gamma_log_cdf_and_sf_match_scipy_across_the_support(shape):
    """The gamma's log SF comes from 1 - CDF up to a CDF of 0.9 and from the upper incomplete function above
    it (its cost): scipy.stats.gamma's on both sides, from a CDF of 1e-12 to an SF of 1e-12."""
    lo, hi = stats.gamma.ppf(1e-12, shape), stats.gamma.isf(1e-12, shape)
    z = np.concatenate([np.geomspace(lo, hi, 3001), [stats.gamma.ppf(GAMMA_UPPER_FROM, shape)]])
    # a batch of rows as a bootstrap has them: this shape, and another one's row beside it
    shapes = np.array([shape, 3.7])
    lcdf, lsf = _logs("gamma", {"shape": shapes, "scale": np.array([2e-6, 2e-6])}, np.stack([z, z]) * 2e-6)
    cdf = stats.gamma.cdf(z, shape)
    assert (cdf < GAMMA_UPPER_FROM).any() and (cdf > GAMMA_UPPER_FROM).any()  # both ways are taken
    for row, a in enumerate(shapes):
        assert np.allclose(lcdf[row], stats.gamma.logcdf(z, a), rtol=1e-10, atol=0)
        assert np.allclose(lsf[row], stats.gamma.logsf(z, a), rtol=1e-10, atol=0)


@pytest.mark.parametrize("xi", [-0.5, -1e-9, 0.0, 1e-9, 0.3, 1.5])
def test_gpd_log_cdf_sf_and_draws_match_scipy(xi):
    """The tail's GPD, without scipy.stats (its import waited for the end of a busy program): as genpareto's."""
    x = np.linspace(0, 5, 2001)
    lcdf, lsf = _logs("gpd", {"xi": np.array([xi]), "scale": np.array([0.7])}, x[None])
    ref_cdf, ref_sf = stats.genpareto.logcdf(x, xi, scale=0.7), stats.genpareto.logsf(x, xi, scale=0.7)
    assert np.array_equal(np.isfinite(lcdf[0]), np.isfinite(ref_cdf))  # -inf at 0; past the end when xi < 0
    assert np.array_equal(np.isfinite(lsf[0]), np.isfinite(ref_sf))
    assert np.allclose(lcdf[0][np.isfinite(ref_cdf)], ref_cdf[np.isfinite(ref_cdf)], rtol=1e-12, atol=1e-15)
    assert np.allclose(lsf[0][np.isfinite(ref_sf)], ref_sf[np.isfinite(ref_sf)], rtol=1e-12, atol=1e-15)
    nan_cdf, nan_sf = _logs("gpd", {"xi": np.array([np.nan]), "scale": np.array([0.7])}, x[None])
    assert np.isnan(nan_cdf).all() and np.isnan(nan_sf).all()  # as genpareto's with a NaN shape
    d = _draw("gpd", {"xi": xi, "scale": 0.7}, np.random.default_rng(5), (1, 20_000))[0]
    assert stats.kstest(d, stats.genpareto(xi, scale=0.7).cdf).pvalue > 0.01


def _fit_json_from_forked_parts(pos: np.ndarray) -> tuple[dict, float]:
    """The fit from forked parts, and the CPU time its children spent (a child that failed would leave its
    part to this process, and the fit would be the same)."""
    import resource

    from jitterscope.simulate.fitting import fit_parts_forked

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    parts = fit_parts_forked(pos, 19, seed=3, processes=3)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return fit_delays(pos, 1e-3, replicates=19, seed=3, parts=parts).to_json(), children


def test_parts_fitted_in_forked_processes_make_the_same_fit():
    """sync's fit shares its families and tail out over processes it forks (in the fit's own process, which
    runs one thread, as here): each part has a random stream of its own, so the fit is the one made in one."""
    from jitterscope.childgroup import ForkedPool

    pos = np.random.default_rng(8).lognormal(np.log(5e-6), 0.4, 3000)
    with ForkedPool(1) as pool:
        forked, children_cpu_s = pool.result(pool.submit(_fit_json_from_forked_parts, pos))
    assert forked == fit_delays(pos, 1e-3, replicates=19, seed=3).to_json()
    assert children_cpu_s > 0.01  # two of the three shares were fitted in forked children


@pytest.mark.parametrize(
    "family,draw",
    [
        ("normal", lambda r: r.normal(1.91e-3, 0.36e-3, 800)),
        ("gamma", lambda r: r.gamma(2.0, 1e-3, 800)),
        ("lognormal", lambda r: np.exp(r.normal(np.log(1e-4), 0.6, 800))),
        ("weibull", lambda r: r.weibull(0.6, 800) * 1e-3),
    ],
)
def test_true_family_fits_and_ranks_first(family, draw):
    f = fit_delays(draw(np.random.default_rng(3)), 0.01, replicates=200)
    assert f.families[0].family == family and f.families[0].fits
    assert f.best_name == family and family in f.verdict
    assert not next(x for x in f.families if x.family == "exponential").fits


def test_bimodal_delays_say_plainly_that_nothing_fits():
    rng = np.random.default_rng(4)
    d = np.concatenate([rng.normal(5e-6, 2e-7, 1900), np.full(20, 2e-3)])
    f = fit_delays(d, 1e-3, replicates=100)
    assert not any(x.fits for x in f.families)
    assert f.verdict.startswith("no family fits")
    # the model handed to simulate keeps the rare 2 ms delays instead of a wrong family
    assert f.best_name == "empirical"
    assert f.best.isf(np.array([0.005]))[0] == pytest.approx(2e-3)


def test_zero_fraction_and_too_few_noisy_phases():
    rng = np.random.default_rng(5)
    d = np.concatenate([np.zeros(600), rng.exponential(20e-6, 400)])
    f = fit_delays(d, 1e-3, replicates=100)
    assert f.zero_fraction == pytest.approx(0.6)
    assert f.families[0].family in ("exponential", "gamma", "weibull")
    assert f.best.sf(np.array(0.0)) == pytest.approx(0.4)
    with pytest.raises(JitterscopeError, match="met any noise.*a longer --phase"):
        fit_delays(np.concatenate([np.zeros(500), np.ones(5)]), 1e-3)
    # fewer phases than a fit needs, every one noisy (noise stretched them): shorter phases make more
    with pytest.raises(JitterscopeError, match=r"only 19 phases of 150 ms; .* a shorter --phase"):
        fit_delays(np.ones(19), 0.15)


def test_bootstrap_p_values_are_calibrated_under_the_null():
    # with parameters estimated from the data, the bootstrap p-value is ~uniform under H0:
    # about 5% of 60 true-gamma samples fall below 0.05 (binomial 99.9%: at most 10)
    rng = np.random.default_rng(6)
    ps = []
    for i in range(60):
        f = fit_delays(rng.gamma(1.5, 1e-3, 150), 0.01, replicates=99, seed=i)
        ps.append(next(x for x in f.families if x.family == "gamma").ad_p)
    assert sum(p < 0.05 for p in ps) <= 10
    assert sum(p > 0.5 for p in ps) >= 18  # and not piled up near 0 (uniform: 30 expected)


def test_fit_run_from_a_run_directory(tmp_path):
    rng = np.random.default_rng(7)
    # one detour in every 10 ms slot with a gamma-distributed length: per-phase delays of a
    # 10 ms phase are then (nearly) that gamma
    n = 1000
    slots = np.arange(n) * 10e6 + 1e6
    durs = rng.gamma(3.0, 50e3, n).astype(np.int64) + 1
    run = write_noise_run(tmp_path / "g", [Source("thread", "job", 1, slots.astype(np.int64), durs)], n * 10e-3)
    f = fit_run(str(run), 10e-3, replicates=100)
    assert len(f.delays_s) > 900 and f.zero_fraction < 0.05
    g = next(x for x in f.families if x.family == "gamma")
    assert g.params["shape"] == pytest.approx(3.0, rel=0.15)
    with pytest.raises(JitterscopeError, match="fewer than 20 phases"):
        fit_run(str(run), 1.0)


def test_fit_says_when_its_tests_ran_on_a_refitted_subsample():
    from jitterscope.simulate.fitting import fit_delays
    from jitterscope.simulate.render import fit_text

    rng = np.random.default_rng(4)
    many = fit_delays(rng.lognormal(np.log(5e-6), 0.4, 3000), 1e-3, replicates=19, gof_cap=2000).to_json()
    assert many["gof"]["subsample"] and many["gof"]["sample"] == 2000
    assert "subsample of 2000 of the 3000" in many["gof"]["tested_on"]
    assert "a random subsample of the 3,000, each family refitted to it" in fit_text(many)
    few = fit_delays(rng.lognormal(np.log(5e-6), 0.4, 500), 1e-3, replicates=19, gof_cap=2000).to_json()
    assert not few["gof"]["subsample"] and "subsample" not in fit_text(few)
