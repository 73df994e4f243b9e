"""Attribution on hand-built timelines: every nesting case and boundary."""

import numpy as np
import pytest

from jitterscope.measure.attribution import attribute, attribute_annotations, source_table


def run(detours, segments):
    """detours: [(cpu, start, dur)]; segments: [(cpu, start, end, kind, name)]."""
    kinds = np.array([s[3] for s in segments], dtype=object)
    names = np.array([s[4] for s in segments], dtype=object)
    sources, codes = source_table(kinds, names)
    d = np.array(detours, dtype=np.int64).reshape(-1, 3)
    s = np.array([s[:3] for s in segments], dtype=np.int64).reshape(-1, 3)
    att = attribute(d[:, 0], d[:, 1], d[:, 2], s[:, 0], s[:, 1], s[:, 2], codes, sources)
    out = {}
    for det, src, ns, off in zip(att.detour, att.source, att.ns, att.offset_ns):
        out.setdefault(int(det), []).append((":".join(sources[src]), int(ns), int(off)))
    return out


def test_nested_nmi_in_irq_in_softirq_in_thread_counts_each_ns_once():
    # The trace partition of: thread kworker 100-200, softirq TIMER 120-180,
    # irq local_timer 130-170, nmi 140-150 (innermost owner per piece).
    segs = [
        (1, 100, 120, "thread", "kworker/1:2"),
        (1, 120, 130, "softirq", "TIMER"),
        (1, 130, 140, "irq", "local_timer"),
        (1, 140, 150, "nmi", "nmi"),
        (1, 150, 170, "irq", "local_timer"),
        (1, 170, 180, "softirq", "TIMER"),
        (1, 180, 200, "thread", "kworker/1:2"),
    ]
    out = run([(1, 100, 100)], segs)
    got = {k: 0 for k in ("thread:kworker/1:2", "softirq:TIMER", "irq:local_timer", "nmi:nmi")}
    for name, ns, _ in out[0]:
        got[name] += ns
    assert got == {"thread:kworker/1:2": 40, "softirq:TIMER": 20, "irq:local_timer": 30, "nmi:nmi": 10}
    assert sum(ns for _, ns, _ in out[0]) == 100
    # Order of first appearance is the order of the chain.
    assert [n for n, _, _ in out[0]] == ["thread:kworker/1:2", "softirq:TIMER", "irq:local_timer", "nmi:nmi"]


def test_activity_starting_before_and_ending_after_the_detour_is_clipped():
    segs = [(1, 0, 1000, "irq", "virtio3-rx")]
    out = run([(1, 400, 50)], segs)
    assert out[0] == [("irq:virtio3-rx", 50, 0)]


def test_uncovered_time_is_unexplained_and_probe_own_thread_too():
    segs = [(1, 0, 10, "thread", "js-probe/1"), (1, 10, 20, "irq", "local_timer"), (1, 20, 100, "thread", "js-probe/1")]
    out = run([(1, 5, 30)], segs)  # 5..35: 5 probe, 10 irq, 15 probe
    assert dict((n, ns) for n, ns, _ in out[0]) == {"irq:local_timer": 10, "unexplained:unexplained": 20}


def test_back_to_back_detours_split_one_activity_between_them():
    segs = [(1, 0, 100, "thread", "sshd")]
    out = run([(1, 10, 20), (1, 30, 20)], segs)
    assert out[0] == [("thread:sshd", 20, 0)]
    assert out[1] == [("thread:sshd", 20, 0)]


def test_cpus_are_kept_apart():
    segs = [(1, 0, 100, "irq", "a"), (2, 0, 100, "irq", "b")]
    out = run([(1, 10, 5), (2, 10, 5)], segs)
    assert out[0][0][0] == "irq:a" and out[1][0][0] == "irq:b"


def test_detour_with_no_trace_at_all_is_unexplained():
    out = run([(3, 10, 5)], [(1, 0, 100, "irq", "a")])
    assert out[0] == [("unexplained:unexplained", 5, 0)]


def test_offset_is_when_the_source_first_took_time():
    segs = [
        (1, 0, 50, "thread", "js-probe/1"),
        (1, 50, 60, "irq", "x"),
        (1, 60, 70, "softirq", "TIMER"),
        (1, 70, 80, "irq", "x"),
    ]
    out = run([(1, 40, 40)], segs)
    assert ("irq:x", 20, 10) in out[0] and ("softirq:TIMER", 10, 20) in out[0]


def test_annotations_find_their_container_and_time_in_detours():
    kinds = np.array(["thread", "thread"], dtype=object)
    names = np.array(["js-probe/1", "kworker/1:1"], dtype=object)
    sources, codes = source_table(kinds, names)
    seg_cpu, seg_s, seg_e = np.array([1, 1]), np.array([0, 100]), np.array([100, 200])
    container, inside = attribute_annotations(
        np.array([1]),
        np.array([110]),
        np.array([150]),
        np.array([1]),
        np.array([100]),
        np.array([20]),
        seg_cpu,
        seg_s,
        seg_e,
        codes,
    )
    assert sources[container[0]] == ("thread", "kworker/1:1")
    assert inside[0] == 10


@pytest.mark.parametrize("n", [1, 1000])
def test_sum_of_parts_is_the_detour_duration(n):
    rng = np.random.default_rng(n)
    bounds = np.sort(rng.choice(np.arange(1, 10**6), size=2 * n, replace=False))
    segs = [(1, int(a), int(b), "irq", f"s{i % 7}") for i, (a, b) in enumerate(zip(bounds[::2], bounds[1::2]))]
    starts = np.sort(rng.choice(np.arange(0, 10**6, 1000), size=50, replace=False))
    dets = [(1, int(s), int(rng.integers(1, 999))) for s in starts]
    out = run(dets, segs)
    for i, (_, _, dur) in enumerate(dets):
        assert sum(ns for _, ns, _ in out[i]) == dur
