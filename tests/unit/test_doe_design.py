"""2^k and 2^(k-p) designs: Yates order, sign table, generators, aliases, resolution, run order."""

from __future__ import annotations

import numpy as np
import pytest

from jitterscope.doe.design import Design, parse_generator, run_order
from jitterscope.errors import JitterscopeError


def test_yates_order_labels_and_levels():
    d = Design(3)
    assert d.labels() == ["(1)", "a", "b", "ab", "c", "ac", "bc", "abc"]
    lv = d.levels()
    # Yates: A alternates every row, B every two, C every four (Montgomery, table 6.x).
    assert lv[:, 0].tolist() == [-1, 1] * 4
    assert lv[:, 1].tolist() == [-1, -1, 1, 1] * 2
    assert lv[:, 2].tolist() == [-1] * 4 + [1] * 4


def test_sign_table_is_orthogonal_and_named():
    d = Design(3)
    s = d.sign_table()
    assert d.effects() == ["A", "B", "AB", "C", "AC", "BC", "ABC"]
    assert (s.T @ s == 8 * np.eye(8)).all()
    # The ABC column is the product of the three main-effect columns.
    assert (s[:, 7] == s[:, 1] * s[:, 2] * s[:, 4]).all()


def test_half_fraction_d_equals_abc():
    d = Design(4, [parse_generator("D=ABC", 4, 1)])
    assert d.n == 8
    assert d.resolution() == 4
    desc = d.describe()
    assert desc["defining_relation"] == "I=ABCD"
    assert desc["aliases"]["A"] == ["BCD"]
    assert desc["aliases"]["AB"] == ["CD"]
    assert d.alias_name("ABC") == "ABC+D"
    lv = d.levels()
    assert (lv[:, 3] == lv[:, 0] * lv[:, 1] * lv[:, 2]).all()
    assert d.labels() == ["(1)", "ad", "bd", "ab", "cd", "ac", "bc", "abcd"]


def test_jain_2_7_4_design_has_resolution_iii():
    # Jain, ch. 19: 2^(7-4) with D=AB, E=AC, F=BC, G=ABC; every row balanced, resolution III.
    gens = [parse_generator(g, 7, 4) for g in ("D=AB", "E=AC", "F=BC", "G=ABC")]
    d = Design(7, gens)
    assert d.n == 8 and d.resolution() == 3
    lv = d.levels()
    assert (lv.sum(axis=0) == 0).all()  # each factor at + in half of the runs
    assert (lv.T @ lv == 8 * np.eye(7)).all()  # main-effect columns orthogonal
    assert len(d.defining_relation()) == 15  # 2^4 - 1 words


def test_negative_generator_flips_the_column():
    d = Design(3, [parse_generator("C=-AB", 3, 1)])
    lv = d.levels()
    assert (lv[:, 2] == -lv[:, 0] * lv[:, 1]).all()
    assert d.describe()["defining_relation"] == "I=-ABC"
    assert d.aliases("A") == ["-BC"]


@pytest.mark.parametrize("text", ["D=AD", "C=AB", "D=A", "D:ABC", "D=ABB"])
def test_bad_generators(text):
    with pytest.raises(JitterscopeError):
        parse_generator(text, 4, 1)


def test_run_order_is_a_seeded_permutation():
    a = run_order(4, 3, seed=7)
    assert sorted(a) == sorted((t, r) for t in range(4) for r in range(3))
    assert a == run_order(4, 3, seed=7)
    assert a != run_order(4, 3, seed=8)
    assert a != sorted(a)
