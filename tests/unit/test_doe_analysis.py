"""Analysis against textbook results (Jain 1991, ch. 17-18) and exact rank-test values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from jitterscope.doe.analysis import Data, allocation, analyze, dunn_holm, group_share, kruskal, outliers
from jitterscope.doe.design import Design, parse_generator
from jitterscope.errors import JitterscopeError

# Jain, Example 17.1: memory size (A: 4/16 MB) x cache size (B: 1/2 KB), MIPS.
JAIN_2X2 = [15, 45, 25, 75]
# Jain, Example 18.1: the same 2^2 design replicated three times.
JAIN_2X2X3 = [[15, 18, 12], [45, 48, 51], [25, 28, 19], [75, 75, 81]]


def _by(al, name):
    return next(e for e in al["effects"] if e["effect"] == name)


def test_jain_2x2_effects_and_variation():
    al = allocation(Design(2), JAIN_2X2)
    assert al["q0"] == pytest.approx(40)
    assert [_by(al, e)["q"] for e in ("A", "B", "AB")] == pytest.approx([20, 10, 5])
    assert al["sst"] == pytest.approx(2100)  # 2^2 (20^2 + 10^2 + 5^2)
    # Jain: A explains 76 %, B 19 %, AB 5 %.
    assert [_by(al, e)["percent"] for e in ("A", "B", "AB")] == pytest.approx([76.19, 19.05, 4.76], abs=0.01)
    assert al["sse"] is None and "ci" not in _by(al, "A")


def test_jain_2x2x3_allocation_and_confidence_intervals():
    al = allocation(Design(2), JAIN_2X2X3, confidence=0.90)
    assert al["q0"] == pytest.approx(41)
    assert [_by(al, e)["q"] for e in ("A", "B", "AB")] == pytest.approx([21.5, 9.5, 5])
    # Jain, Example 18.2: SST = 7032 = SSA 5547 + SSB 1083 + SSAB 300 + SSE 102.
    assert al["sst"] == pytest.approx(7032)
    assert [_by(al, e)["ss"] for e in ("A", "B", "AB")] == pytest.approx([5547, 1083, 300])
    assert al["sse"] == pytest.approx(102)
    assert [_by(al, e)["percent"] for e in ("A", "B", "AB")] == pytest.approx([78.88, 15.40, 4.27], abs=0.01)
    assert al["error_percent"] == pytest.approx(1.45, abs=0.01)
    # Example 18.3: s_e = sqrt(102/8) = 3.57, s_q = s_e/sqrt(12) = 1.03, t[0.95; 8] = 1.86.
    assert al["s_e"] == pytest.approx(3.57, abs=0.005)
    assert al["s_q"] == pytest.approx(1.03, abs=0.005)
    assert al["t"] == pytest.approx(1.86, abs=0.005)
    # 90 % CIs: q0 (39.08, 42.91), qA (19.58, 23.41), qB (7.58, 11.41), qAB (3.08, 6.91).
    assert al["mean"]["ci"] == pytest.approx([39.08, 42.92], abs=0.01)
    assert _by(al, "A")["ci"] == pytest.approx([19.58, 23.42], abs=0.01)
    assert _by(al, "B")["ci"] == pytest.approx([7.58, 11.42], abs=0.01)
    assert _by(al, "AB")["ci"] == pytest.approx([3.08, 6.92], abs=0.01)
    assert all(_by(al, e)["significant"] for e in ("A", "B", "AB"))


def test_error_term_decides_significance():
    # Same means as Jain 18.1 but a large within-treatment spread: AB's CI now spans 0.
    y = np.array(JAIN_2X2X3, float)
    noisy = y.mean(axis=1, keepdims=True) + np.array([-12.0, 0.0, 12.0])
    al = allocation(Design(2), noisy, confidence=0.95)
    assert _by(al, "A")["q"] == pytest.approx(21.5)
    assert _by(al, "A")["significant"] and not _by(al, "AB")["significant"]
    assert _by(al, "AB")["ci"][0] < 0 < _by(al, "AB")["ci"][1]
    # The variation decomposes exactly: sum of SS_j + SSE = SST.
    assert sum(e["ss"] for e in al["effects"]) + al["sse"] == pytest.approx(al["sst"])


def test_multiplicative_model_recovers_factors():
    # y = 10 * 4^xA * 0.5^xB (xA, xB in {-1, +1}): log10 effects are log10 of the factors.
    d = Design(2)
    lv = d.levels()
    y = 10 * 4.0 ** lv[:, 0] * 0.5 ** lv[:, 1]
    al = allocation(d, y, log=True)
    # From low to high: A multiplies y by 4^2, B by 0.5^2; the mean is the geometric mean 10.
    assert _by(al, "A")["ratio"] == pytest.approx(16)
    assert _by(al, "B")["ratio"] == pytest.approx(0.25)
    assert al["mean"]["ratio"] == pytest.approx(10)
    assert _by(al, "AB")["q"] == pytest.approx(0, abs=1e-12)
    with pytest.raises(JitterscopeError, match="needs every response > 0"):
        allocation(d, [1, 2, 0, 3], log=True)


def test_fractional_effect_estimates_alias_sums():
    # 2^(3-1), C = AB: the A column estimates A + BC.  Response y = 3 xA + 2 xB xC + 1.
    d = Design(3, [parse_generator("C=AB", 3, 1)])
    lv = d.levels()
    y = 1 + 3 * lv[:, 0] + 2 * lv[:, 1] * lv[:, 2]
    al = allocation(d, y)
    assert _by(al, "A")["q"] == pytest.approx(5)
    assert _by(al, "A")["label"] == "A+BC"


def test_kruskal_wallis_exact_reference():
    # Ranks 1-3, 4-6, 7-9: H = 12/(9*10) * (6^2+15^2+24^2)/3 - 3*10 = 7.2, p = exp(-7.2/2) (chi2, df 2).
    kw = kruskal([np.array([1, 2, 3]), np.array([4, 5, 6]), np.array([7, 8, 9])])
    assert kw["h"] == pytest.approx(7.2)
    assert kw["df"] == 2
    assert kw["p"] == pytest.approx(math.exp(-3.6))


def test_kruskal_wallis_matches_hand_formula_on_random_data():
    rng = np.random.default_rng(3)
    groups = [rng.normal(m, 1, 6) for m in (0, 0.5, 2)]
    allv = np.concatenate(groups)
    ranks = stats.rankdata(allv)
    n = len(allv)
    sums, i = [], 0
    for g in groups:
        sums.append(ranks[i : i + len(g)].sum())
        i += len(g)
    h = 12 / (n * (n + 1)) * sum(s * s / len(g) for s, g in zip(sums, groups)) - 3 * (n + 1)
    assert kruskal(groups)["h"] == pytest.approx(h)


def test_dunn_holm_exact_reference():
    # Mean ranks 2, 5, 8; sigma = sqrt(N(N+1)/12 * (1/3+1/3)) = sqrt(5).  Raw two-sided p:
    # 1-3: z = 6/sqrt5 -> 0.00729; 1-2 and 2-3: z = 3/sqrt5 -> 0.1797.  Holm: 3*0.00729, 2*0.1797.
    p = dunn_holm([np.array([1, 2, 3]), np.array([4, 5, 6]), np.array([7, 8, 9])])
    p13 = 2 * stats.norm.sf(6 / math.sqrt(5))
    p12 = 2 * stats.norm.sf(3 / math.sqrt(5))
    assert p[0, 2] == pytest.approx(3 * p13)
    assert p[0, 1] == pytest.approx(2 * p12)
    assert p[1, 2] == pytest.approx(2 * p12)
    assert p[0, 2] == pytest.approx(0.0219, abs=1e-4)


def test_group_share_matrix():
    # 2^2 design grouped by A: G1 = {(1), b}, G2 = {a, ab}; only the pairs across groups differ.
    lv = Design(2).levels()
    p = np.ones((4, 4))
    for i in (0, 2):
        for j in (1, 3):
            p[i, j] = p[j, i] = 0.001
    p[1, 2] = p[2, 1] = 0.5  # one cross pair not significant
    gs = group_share(lv, p, [0], 0.05)
    assert gs["members"] == [[0, 2], [1, 3]]
    assert gs["share"][0][1] == pytest.approx(0.75)
    assert gs["share"][0][0] == 0 and gs["share"][1][1] == 0
    assert gs["pairs"][0][1] == 4


def test_outliers_are_reported_not_replaced():
    assert outliers(np.array([10, 11, 10, 12, 11, 50.0])) == [5]
    assert outliers(np.array([1.0, 100.0, 1.0])) == []  # too few points for fences
    y = np.array([[1, 1.1, 0.9, 1.0, 9.0], [2, 2.1, 1.9, 2.0, 2.05], [1, 1.1, 0.9, 1.0, 1.0], [2, 2, 2, 2.1, 2]])
    a = analyze(Data(Design(2), ["x", "y"], y, [[5 * i + k for k in range(5)] for i in range(4)], "s"))
    t0 = a["treatments"][0]
    assert t0["outliers"] == [{"run": 4, "value": 9.0}]
    assert t0["values"][4] == 9.0 and t0["mean"] == pytest.approx(np.mean(y[0]))
    assert a["group_comparisons"]["by"] == ["A", "B"]
    # the H test runs on the treatments' replicates, outlier included (reported, not replaced)
    assert a["kruskal_wallis"]["p"] == pytest.approx(stats.kruskal(*y).pvalue, rel=1e-12)


def test_default_grouping_reads_aliased_columns_in_a_fractional_design():
    # 2^(4-1) with D = ABC: D's main effect sits in column ABC; D dominates, A is second
    d = Design(4, [parse_generator("D=ABC", 4, 1)])
    lv = d.levels()
    rng = np.random.default_rng(5)
    y = 10 + 5 * lv[:, 3:4] + 2 * lv[:, 0:1] + rng.normal(0, 0.1, (d.n, 3))
    res = analyze(Data(d, ["a", "b", "c", "d"], y, [[0, 1, 2]] * d.n, "us"))
    assert res["group_comparisons"]["by"] == ["A", "D"]


def test_effect_p_is_the_two_sided_t_test_on_the_error_dof():
    d = Design(2, [])
    y = np.array([[15, 18, 12], [45, 48, 51], [25, 28, 19], [75, 75, 81]], dtype=float)
    a = allocation(d, y)
    for e in a["effects"]:
        t = abs(e["q"]) / a["s_q"]
        assert e["p"] == pytest.approx(2 * stats.t.sf(t, a["dof_error"]))
        assert e["significant"] == (e["p"] < 1 - a["confidence"])
