"""The sync causes table as columns (sync/causetable.py): joined, selected, summed and written as the rows were."""

from __future__ import annotations

import numpy as np

from jitterscope.sync.causetable import SIDES, CauseTable


def _t(
    jitter: list[int], side: list[str], source: list[int], ns: list[int], sources: list[tuple[str, str]]
) -> CauseTable:
    a = np.asarray
    return CauseTable(a(jitter), a([SIDES.index(s) for s in side]), a(source), a(ns), tuple(sources))


def test_joined_tables_share_one_source_list_and_keep_their_rows_in_order() -> None:
    one = _t([1, 1], ["waiter", "waiter"], [0, 1], [5, 7], [("irq", "eth0"), ("self", "self")])
    two = _t([9], ["holder"], [1], [3], [("thread", "kworker"), ("irq", "eth0")])
    both = one + two
    assert both.sources == (("irq", "eth0"), ("self", "self"), ("thread", "kworker"))
    assert both.arrow().to_pylist() == [
        {"jitter": 1, "side": "waiter", "kind": "irq", "name": "eth0", "ns": 5},
        {"jitter": 1, "side": "waiter", "kind": "self", "name": "self", "ns": 7},
        {"jitter": 9, "side": "holder", "kind": "irq", "name": "eth0", "ns": 3},
    ]
    assert (CauseTable.empty() + one).arrow().equals(one.arrow())
    assert len(one + CauseTable.empty()) == 2


def test_totals_sum_per_side_and_source_in_first_seen_order() -> None:
    t = _t(
        [1, 2, 2, 3],
        ["waiter", "caller", "waiter", "waiter"],
        [1, 0, 1, 0],
        [10, 20, 30, 40],
        [("irq", "eth0"), ("thread", "cc1")],
    )
    assert t.totals() == {("waiter", "thread", "cc1"): 40, ("caller", "irq", "eth0"): 20, ("waiter", "irq", "eth0"): 40}
    assert list(t.totals()) == [("waiter", "thread", "cc1"), ("caller", "irq", "eth0"), ("waiter", "irq", "eth0")]
    assert t.of({2}).totals() == {("caller", "irq", "eth0"): 20, ("waiter", "thread", "cc1"): 30}
    assert t.of(set()).totals() == {} and CauseTable.empty().totals() == {}
    assert CauseTable.empty().arrow().num_rows == 0
