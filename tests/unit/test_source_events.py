"""Each source's own events in the window, beside the detours it took part in, on a hand-built trace.

The trace (ticks, tsc_hz = 1e9, so a tick is a ns) has a 1 ms local timer, a daemon
switched in twice, a virtio IRQ twice, and activity that began before the capture.
Only some occurrences make a detour, one detour holds a tick inside the daemon's slice,
and some occurrences fall outside the probe's window: the event count must be
the occurrences inside the window, the detour count the detours, and the two differ.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterscope.measure.attribution import attribute, source_table
from jitterscope.measure.build import make_summary
from jitterscope.measure.events import count_events
from jitterscope.measure.render import render_summary
from jitterscope.tracing.parse import parse_trace
from tests.support import synth as S

pytestmark = S.needs_parser()

CPU = 1
T0 = 1_000_000_000
MS = 1_000_000
PROBE = ("js-probe/1", 50)
WINDOW = (1 * MS, 9 * MS)  # the probe's first and last read, ns since T0


def trace_events() -> list[tuple[int, bytes]]:
    ev = [(T0 + 50, S.local_timer_exit(50))]  # entered before the capture: no event
    for k in range(10):  # ticks at k ms + 500; k = 0 and 9 fall outside the window
        t = T0 + k * MS + 500
        pid = 77 if k == 3 else 50
        ev += [(t, S.local_timer_entry(pid)), (t + 2000, S.local_timer_exit(pid))]
    for t in (T0 + 2 * MS + 500_000, T0 + 6 * MS + 500_000):
        ev += [(t, S.irq_entry(11, "virtio0", 50)), (t + 800, S.irq_exit(11, 50))]
    for a, b in ((3 * MS, 3 * MS + 400_000), (5 * MS, 5 * MS + 300)):
        ev += [(T0 + a, S.switch(*PROBE, "daemon", 77)), (T0 + b, S.switch("daemon", 77, *PROBE))]
    return sorted(ev, key=lambda e: e[0])


def parsed(tmp_path: Path):
    S.write_trace(tmp_path / "trace", {CPU: S.paginate(trace_events())}, window=(T0, T0 + 10 * MS))
    td = parse_trace(tmp_path / "trace")
    act = td.activity
    kinds = act.column("kind").combine_chunks()
    sources, codes = source_table(kinds, act.column("name").combine_chunks())
    start = act.column("start_tsc").to_numpy() - T0
    events = count_events(
        codes,
        kinds.to_numpy(zero_copy_only=False),
        act.column("cpu").to_numpy(),
        start,
        act.column("entered").to_numpy(zero_copy_only=False),
        {CPU: (float(WINDOW[0]), float(WINDOW[1]))},
        len(sources),
    )
    return td, sources, codes, events


def by_name(sources, events) -> dict[str, int]:
    return {name: int(events.counts[i]) for i, (_, name) in enumerate(sources) if i}


def test_events_are_the_entries_seen_inside_the_window(tmp_path: Path) -> None:
    _, sources, _, events = parsed(tmp_path)
    counts = by_name(sources, events)
    # ticks k = 1..8 (k = 0, 9 outside; the one running at the capture's start was not entered)
    assert counts["local_timer"] == 8
    assert counts["virtio0"] == 2
    assert counts["daemon"] == 2  # its switch-ins; the probe's own switch-ins are nobody's events
    assert events.counts[0] == 0
    assert events.cpus[sources.index(("irq", "local_timer"))] == [CPU]
    assert events.exposure_s == pytest.approx(8e-3)


def test_a_window_that_excludes_the_cpu_counts_nothing(tmp_path: Path) -> None:
    td, sources, codes, _ = parsed(tmp_path)
    act = td.activity
    none = count_events(
        codes,
        act.column("kind").to_numpy(zero_copy_only=False),
        act.column("cpu").to_numpy(),
        act.column("start_tsc").to_numpy() - T0,
        act.column("entered").to_numpy(zero_copy_only=False),
        {CPU + 1: (float(WINDOW[0]), float(WINDOW[1]))},
        len(sources),
    )
    assert int(none.counts.sum()) == 0


def summary_of(tmp_path: Path):
    td, sources, codes, events = parsed(tmp_path)
    seg = td.segments
    # detours: ticks 1 and 2, the daemon's first slice (holding tick 3), its second slice
    det = np.array(
        [
            (CPU, 1 * MS + 500, 2000),
            (CPU, 2 * MS + 500, 2000),
            (CPU, 3 * MS, 400_000),
            (CPU, 5 * MS, 300),
        ],
        dtype=np.int64,
    )
    att = attribute(
        det[:, 0],
        det[:, 1],
        det[:, 2],
        seg["cpu"].astype(np.int32),
        seg["start_tsc"].astype(np.int64) - T0,
        seg["end_tsc"].astype(np.int64) - T0,
        codes[seg["owner"].astype(np.int64)],
        sources,
    )
    meta = {
        "id": "x",
        "host": "h",
        "kernel": "k",
        "start": "t",
        "duration_s": 0.008,
        "options": {"threshold_ns": 200},
        "cpus": [CPU],
        "tracing": {"enabled": True, "reason": None},
        "virtualization": None,
        "steal_ns": 0,
        "lost_events": 0,
    }
    measured = {CPU: float(WINDOW[1] - WINDOW[0])}
    return make_summary(meta, att, det[:, 0], det[:, 1], det[:, 2], measured, {CPU: 20.0}, {}, events)


def test_summary_reports_events_and_detours_apart(tmp_path: Path) -> None:
    s = summary_of(tmp_path)
    rows = {x["name"]: x for x in s["sources"]}
    tick = rows["local_timer"]
    assert (tick["count"], tick["events"]) == (3, 8)  # 3 detours held a tick; 8 ticks ran
    assert tick["events_per_s"] == pytest.approx(1000.0)
    assert tick["detours_per_s"] == pytest.approx(375.0)
    daemon = rows["daemon"]
    assert (daemon["count"], daemon["events"]) == (2, 2)
    # the virtio IRQ made no detour: listed apart with its events
    assert "virtio0" not in rows
    assert s["quiet_sources"] == [{"kind": "irq", "name": "virtio0", "events": 2, "events_per_s": 250.0, "cpus": [CPU]}]


def test_terminal_summary_shows_both_rates(tmp_path: Path) -> None:
    out = render_summary(summary_of(tmp_path))
    line = next(x for x in out.splitlines() if "local_timer" in x)
    assert " 375 " in line and " 1000 " in line
    assert "ran without a detour above the threshold: virtio0 250/s" in out


def test_a_summary_without_event_counts_renders_dashes(tmp_path: Path) -> None:
    s = summary_of(tmp_path)
    for row in s["sources"]:
        row["events"] = row["events_per_s"] = row["detours_per_s"] = None
    s["quiet_sources"] = []
    line = next(x for x in render_summary(s).splitlines() if "local_timer" in x)
    assert line.split()[5:8] == ["3", "-", "-"]


def test_compare_shows_each_sources_event_rate_beside_its_detour_rate() -> None:
    from types import SimpleNamespace

    from jitterscope.compare.events import add_event_rates
    from jitterscope.compare.render import _events

    def run(timer: int, kworker: int, counted: bool = True, cpus=(1,)) -> SimpleNamespace:
        rows = [{"kind": "irq", "name": "local_timer", "events": timer if counted else None}]
        quiet = [{"kind": "thread", "name": "kworker/1:2", "events": kworker}]
        return SimpleNamespace(
            summary={"sources": rows, "quiet_sources": quiet}, cpus=list(cpus), meta={"duration_s": 2.0}
        )

    def rows() -> list[dict]:
        return [{"kind": "irq", "name": "local_timer"}, {"kind": "thread", "name": "kworker/1:*"}]

    r = rows()
    add_event_rates(run(500, 10), run(540, 0), [1], r)
    assert r[0]["events"] == {"base_per_s": 250.0, "new_per_s": 270.0, "ratio": 1.08}
    assert r[1]["events"] == {"base_per_s": 5.0, "new_per_s": 0.0, "ratio": 0.0}  # kworker ids compare as one key
    assert _events(r[0]) == "; its events 250 -> 270/s x1.08"
    for base, new, cpus in (
        (run(500, 10, counted=False), run(540, 0), [1]),
        (run(500, 10), run(540, 0, cpus=(0, 1)), [1]),
    ):
        r = rows()
        add_event_rates(base, new, cpus, r)  # not counted, or a run measured other CPUs too: not shown
        assert all(x["events"] is None for x in r) and _events(r[0]) == ""
