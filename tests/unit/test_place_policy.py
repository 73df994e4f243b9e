"""The policies' decisions (Knauerhase et al. 2008) (place/policy.py) against the spec's worked examples (B.2-B.6)."""

from __future__ import annotations

import pytest

from jitterscope.place import policy as P
from jitterscope.place.observe import Snap, weight


def _snap(cycles: int, misses: int) -> Snap:
    return Snap(0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, None, (cycles, misses, 0, 0))


def test_weight_is_the_last_quantum_misses_per_cycle_unsmoothed() -> None:
    assert weight(_snap(0, 0), _snap(100_000_000, 2_000_000), None) == (0.02, "pmu")
    seq = [_snap(0, 0), _snap(100, 1), _snap(200, 1), _snap(300, 3)]  # w = 0.01, 0, 0.02
    ws = [weight(a, b, None)[0] for a, b in zip(seq, seq[1:])]
    assert ws == pytest.approx([0.01, 0.0, 0.02])  # the policy sees 0.02 next, no average
    assert weight(Snap(*[0] * 12, None, None), Snap(*[0] * 12, 0.7, None), 0.3) == (0.3, "declared")
    assert weight(Snap(*[0] * 12, None, None), Snap(*[0] * 12, 0.7, None), None) == (0.7, "oracle")


def _cpu_queues() -> tuple[list[P.Task], list[P.Task]]:
    return [P.Task(1, "cb", 1.0), P.Task(2, "sl", 0.0)], [P.Task(3, "cb", 1.0), P.Task(4, "sl", 0.0)]


def _schedule(worst: bool, quanta: int = 8) -> list[tuple[str, str]]:
    q0, q1 = _cpu_queues()
    goal = P.target([1, 0, 1, 0], 2)
    out, run1 = [], None
    for k in range(quanta):
        a, _ = P.choose(q0, run1.weight if run1 else 0.0, goal, 1.0, 4, worst)
        a.ran_epoch, a.last_ran_ns = True, k
        b, _ = P.choose(q1, a.weight, goal, 1.0, 4, worst)
        b.ran_epoch, b.last_ran_ns = True, k
        run1 = b
        out.append((a.name, b.name))
    return out


def test_obs_l_pairs_heavy_with_light_and_worst_pairs_heavy_with_heavy() -> None:
    assert all(x != y for x, y in _schedule(False))  # [cb,sl][sl,cb]
    assert all(x == y for x, y in _schedule(True))  # [cb,sl][cb,sl]
    assert [x for x, _ in _schedule(False)].count("cb") == 4  # fair: each task half of its CPU


def test_obs_l_never_skips_a_higher_priority_task() -> None:
    light_hi, heavy_lo = P.Task(1, "sl", 0.0, prio=-5), P.Task(2, "cb", 1.0, prio=5)
    pick, why = P.choose([heavy_lo, light_hi], 0.0, 1.0, 1.0, 4)  # the complement would be cb
    assert pick is light_hi and "lower-priority" in why


def test_bins_on_a_log_scale() -> None:
    assert [P.binned(w, 1.0, 4) for w in (0, 5e-4, 2e-3, 0.05, 0.5)] == [0, 0, 0.01, 0.1, 1.0]
    assert P.binned(0.37, 1.0, 0) == 0.37


def test_obs_x_placement_alternates_and_rebalance_moves_one_heavy() -> None:
    groups: list[list[P.Task]] = [[], []]
    for i, w in enumerate([1, 1, 1, 1, 0, 0, 0, 0]):
        g = P.place_new([sum(t.weight for t in x) for x in groups], [len(x) for x in groups])
        groups[g].append(P.Task(i, "cb" if w else "sl", w))
    assert [sum(t.weight for t in g) for g in groups] == [2, 2] and P.balanced(groups)
    skew = [[P.Task(i, "cb", 1.0) for i in range(4)] + [P.Task(9, "sl", 0.0)], [P.Task(8, "sl", 0.0)]]
    t, hi, lo = P.rebalance(skew)
    assert (t.name, hi, lo) == ("cb", 0, 1) and not P.balanced(skew)
    assert P.rebalance([[P.Task(1, "cb", 1.0)], [P.Task(2, "cb", 1.0)]]) is None


def test_obs_c_credit_example_and_conservation() -> None:
    assert P.credit_ns(0.8, 0.1, 100e6, 0.02) == pytest.approx(1.4e6)  # spec B.5: 1.4 ms
    s = P.Settings(credit=0.02, norm="1")
    heavy, light = P.Task(1, "h", 0.8), P.Task(2, "l", 0.1)
    assert P.transfer(heavy, light, 100e6, s, 1.0) == pytest.approx(1.4e6)
    assert light.credit_ns == pytest.approx(1.4e6) and heavy.credit_ns + light.credit_ns == 0
    assert P.slot_ns(light, s) + P.slot_ns(heavy, s) == pytest.approx(2 * s.quantum_ns)  # CPU time conserved
    s0 = P.Settings(credit=0.0)
    a, b = P.Task(1, "h", 0.8), P.Task(2, "l", 0.1)
    assert P.transfer(a, b, 100e6, s0, 1.0) == 0 and P.slot_ns(b, s0) == s0.quantum_ns  # C = 0 is OBS-L


def test_obs_f_state_machine() -> None:
    f2, f1, ban = P.Settings(f_variant=2), P.Settings(f_variant=1), P.Settings(ban_after=3)
    t = P.Task(1, "fp")
    assert P.f_fault(t, 1) == "pin" and P.f_fault(t, 1) is None
    assert P.f_quantum(t, True, f2) is None and P.f_quantum(t, False, f2) == "release" and not t.f.pinned
    t1 = P.Task(2, "fp")
    P.f_fault(t1, 1)
    assert all(P.f_quantum(t1, False, f1) is None for _ in range(5)) and t1.f.pinned  # F1 never releases
    tb = P.Task(3, "fp")
    P.f_fault(tb, 1)
    assert [P.f_quantum(tb, True, ban) for _ in range(3)] == [None, None, "ban"]
    assert P.f_quantum(tb, False, ban) is None and tb.f.banned and tb.f.pinned
