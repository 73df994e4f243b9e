"""The trace page parser on hand-built pages and event sequences.

Needs only the compiled jitterscope-traceparse (built with the package); no
root, no tracefs.  Times are in ticks with tsc_hz = 1e9, so NMI delta_ns are ticks.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from jitterscope.tracing.parse import TraceData, lost_per_cpu, parse_trace
from tests.support import synth as S

pytestmark = S.needs_parser()

CPU = 1
T0 = 1_000_000_000  # capture start (TSC)


def parse(
    tmp_path: Path,
    events: list[tuple[int, bytes]],
    window: tuple[int, int] | None = None,
    pages: list[S.Page] | None = None,
    **kw,
) -> TraceData:
    S.write_trace(tmp_path / "trace", {CPU: pages if pages is not None else S.paginate(events)}, window=window, **kw)
    return parse_trace(tmp_path / "trace")


def rows(td: TraceData) -> list[dict]:
    return td.activity.to_pylist()


def find(td: TraceData, kind: str, name: str) -> list[dict]:
    return [r for r in rows(td) if r["kind"] == kind and r["name"] == name]


def seg_list(td: TraceData) -> list[tuple[int, int, str]]:
    names = td.activity.column("name").to_pylist()
    return [(int(s["start_tsc"]), int(s["end_tsc"]), names[int(s["owner"])]) for s in td.segments]


def check_partition(td: TraceData) -> None:
    """Segments are sorted, disjoint, non-empty, inside their owner's interval, owners own time."""
    seg = td.segments
    assert np.all(seg["end_tsc"] > seg["start_tsc"])
    same = seg["cpu"][1:] == seg["cpu"][:-1]
    assert np.all(seg["start_tsc"][1:][same] >= seg["end_tsc"][:-1][same])
    act = rows(td)
    for s in seg:
        owner = act[int(s["owner"])]
        assert owner["kind"] in ("thread", "irq", "softirq", "nmi")
        assert owner["start_tsc"] <= s["start_tsc"] and s["end_tsc"] <= owner["end_tsc"]
        assert owner["cpu"] == s["cpu"]


def test_nmi_in_irq_in_softirq_in_another_tasks_slice(tmp_path: Path) -> None:
    t = T0
    ev = [
        (t + 100, S.switch("probe", 50, "ksoftirqd/1", 22)),
        (t + 200, S.softirq_entry(1, 22)),  # TIMER softirq in ksoftirqd's slice
        (t + 300, S.irq_entry(11, "virtio0", 22)),  # hard IRQ inside it
        (t + 450, S.nmi(0xFFFFFFFF81000000, 100, 22)),  # NMI [350, 450] inside the IRQ
        (t + 500, S.irq_exit(11, 22)),
        (t + 600, S.softirq_exit(1, 22)),
        (t + 700, S.switch("ksoftirqd/1", 22, "probe", 50)),
    ]
    td = parse(tmp_path, ev, window=(T0, T0 + 1000), symbols={0xFFFFFFFF81000000: "perf_event_nmi_handler"})
    check_partition(td)
    (thread,) = find(td, "thread", "ksoftirqd/1")
    (soft,) = find(td, "softirq", "TIMER")
    (irq,) = find(td, "irq", "virtio0")
    (nmi,) = find(td, "nmi", "perf_event_nmi_handler")
    assert (thread["start_tsc"], thread["end_tsc"], thread["depth"], thread["pid"]) == (t + 100, t + 700, 0, 22)
    assert (soft["start_tsc"], soft["end_tsc"], soft["depth"], soft["detail"]) == (t + 200, t + 600, 1, "1")
    assert (irq["start_tsc"], irq["end_tsc"], irq["depth"], irq["detail"]) == (t + 300, t + 500, 2, "11")
    assert (nmi["start_tsc"], nmi["end_tsc"], nmi["depth"]) == (t + 350, t + 450, 3)
    assert not any(r["clipped"] for r in (thread, soft, irq, nmi))
    assert seg_list(td) == [
        (T0, t + 100, "probe"),
        (t + 100, t + 200, "ksoftirqd/1"),
        (t + 200, t + 300, "TIMER"),
        (t + 300, t + 350, "virtio0"),
        (t + 350, t + 450, "perf_event_nmi_handler"),
        (t + 450, t + 500, "virtio0"),
        (t + 500, t + 600, "TIMER"),
        (t + 600, t + 700, "ksoftirqd/1"),
        (t + 700, T0 + 1000, "probe"),
    ]
    # the probe's slice before the first switch began before the capture: clipped
    first = [r for r in find(td, "thread", "probe") if r["start_tsc"] == T0]
    assert first and first[0]["clipped"]
    assert td.n_events == len(ev) and td.lost_events == 0


def test_activity_begun_before_the_capture_starts_at_capture_start(tmp_path: Path) -> None:
    # The capture opens inside a local_timer IRQ nested in a NET_RX softirq.
    ev = [
        (T0 + 50, S.local_timer_exit(7)),
        (T0 + 80, S.softirq_exit(3, 7)),
        (T0 + 120, S.switch("app", 7, "swapper/1", 0)),
    ]
    td = parse(tmp_path, ev, window=(T0, T0 + 200))
    check_partition(td)
    (timer,) = find(td, "irq", "local_timer")
    (soft,) = find(td, "softirq", "NET_RX")
    assert (timer["start_tsc"], timer["end_tsc"], timer["clipped"]) == (T0, T0 + 50, True)
    assert (soft["start_tsc"], soft["end_tsc"], soft["clipped"]) == (T0, T0 + 80, True)
    assert soft["depth"] == 1 and timer["depth"] == 2  # the IRQ sat inside the softirq
    assert seg_list(td) == [
        (T0, T0 + 50, "local_timer"),
        (T0 + 50, T0 + 80, "NET_RX"),
        (T0 + 80, T0 + 120, "app"),
        (T0 + 120, T0 + 200, "swapper/1"),
    ]


def test_activity_running_at_the_end_is_clipped_to_the_capture_end(tmp_path: Path) -> None:
    ev = [(T0 + 10, S.switch("a", 5, "b", 6)), (T0 + 40, S.softirq_entry(9, 6))]
    td = parse(tmp_path, ev, window=(T0, T0 + 100))
    (rcu,) = find(td, "softirq", "RCU")
    (b,) = find(td, "thread", "b")
    assert (rcu["end_tsc"], rcu["clipped"]) == (T0 + 100, True)
    assert (b["end_tsc"], b["clipped"]) == (T0 + 100, True)
    assert seg_list(td)[-1] == (T0 + 40, T0 + 100, "RCU")


def test_a_window_the_trace_did_not_close_ends_each_cpus_activity_at_its_last_event(tmp_path: Path) -> None:
    """A killed run's window ends at the probe's end (session.json window_end "probe"): what ran after the trace's
    last event is unknown, so the softirq open there is not stretched over the rest of the window (a trace cut
    after two pages once had one local_timer take 95% of a run's noise)."""
    ev = [(T0 + 10, S.switch("a", 5, "b", 6)), (T0 + 40, S.softirq_entry(9, 6))]
    S.write_trace(tmp_path / "trace", {CPU: S.paginate(ev)}, window=(T0, T0 + 100))
    info = json.loads((tmp_path / "trace" / "session.json").read_text())
    (tmp_path / "trace" / "session.json").write_text(json.dumps({**info, "window_end": "probe"}))
    td = parse_trace(tmp_path / "trace")
    (rcu,) = find(td, "softirq", "RCU")
    (b,) = find(td, "thread", "b")
    assert rcu["end_tsc"] == b["end_tsc"] == T0 + 40
    assert seg_list(td)[-1] == (T0 + 10, T0 + 40, "b")  # nothing owns the time after the last event


def test_back_to_back_activities_leave_no_gap_or_empty_segment(tmp_path: Path) -> None:
    ev = [
        (T0 + 10, S.switch("a", 5, "b", 6)),
        (T0 + 20, S.local_timer_entry(6)),
        (T0 + 30, S.local_timer_exit(6)),
        (T0 + 30, S.local_timer_entry(6)),
        (T0 + 45, S.local_timer_exit(6)),  # same instant
        (T0 + 45, S.switch("b", 6, "c", 7)),
        (T0 + 45, S.switch("c", 7, "d", 8)),
    ]
    td = parse(tmp_path, ev, window=(T0, T0 + 60))
    check_partition(td)
    # two separate interrupts: two segments meeting at T0+30, each owned by its own interval
    assert seg_list(td) == [
        (T0, T0 + 10, "a"),
        (T0 + 10, T0 + 20, "b"),
        (T0 + 20, T0 + 30, "local_timer"),
        (T0 + 30, T0 + 45, "local_timer"),
        (T0 + 45, T0 + 60, "d"),
    ]
    assert td.segments["owner"][2] != td.segments["owner"][3]
    assert len(find(td, "irq", "local_timer")) == 2
    (c,) = find(td, "thread", "c")
    assert c["start_tsc"] == c["end_tsc"] == T0 + 45  # a zero-length slice is kept, owns nothing


def test_annotations_own_no_time_and_sit_inside_their_container(tmp_path: Path) -> None:
    fn_tick, fn_work = 0xFFFFFFFF81100000, 0xFFFFFFFF81200000
    ev = [
        (T0 + 10, S.switch("a", 5, "kworker/1:1", 30)),
        (T0 + 20, S.work_start(0xDEAD, fn_work, 30)),
        (T0 + 30, S.local_timer_entry(30)),
        (T0 + 32, S.hrtimer_entry(0xBEEF, fn_tick, 30)),
        (T0 + 38, S.hrtimer_exit(0xBEEF, 30)),
        (T0 + 40, S.local_timer_exit(30)),
        (T0 + 50, S.switch("kworker/1:1", 30, "a", 5)),  # preempted mid-item
        (T0 + 70, S.switch("a", 5, "kworker/1:1", 30)),  # resumes it
        (T0 + 90, S.work_end(0xDEAD, fn_work, 30)),
    ]
    td = parse(tmp_path, ev, window=(T0, T0 + 100), symbols={fn_tick: "tick_nohz_handler", fn_work: "vmstat_update"})
    check_partition(td)
    (tick,) = find(td, "timer", "tick_nohz_handler")
    assert (tick["start_tsc"], tick["end_tsc"], tick["depth"], tick["detail"]) == (T0 + 32, T0 + 38, 2, "hrtimer")
    work = sorted((r["start_tsc"], r["end_tsc"], r["depth"]) for r in find(td, "work", "vmstat_update"))
    assert work == [(T0 + 20, T0 + 50, 1), (T0 + 70, T0 + 90, 1)]  # only while the kworker ran
    owners = {n for *_, n in seg_list(td)}
    assert "vmstat_update" not in owners and "tick_nohz_handler" not in owners


def test_time_extend_and_absolute_deltas(tmp_path: Path) -> None:
    gap = 3 << 27  # needs a TIME_EXTEND
    ev = [
        (T0, S.switch("a", 5, "b", 6)),
        (T0 + gap + 7, S.switch("b", 6, "a", 5)),
        (T0 + 2 * gap + 123_456_789, S.switch("a", 5, "b", 6)),
    ]
    td = parse(tmp_path, ev)
    starts = sorted(r["start_tsc"] for r in rows(td) if not r["clipped"])
    assert starts == [T0, T0 + gap + 7]
    assert td.n_events == 3


def test_padding_events_are_skipped_without_shifting_time(tmp_path: Path) -> None:
    ev = [(T0 + 10, S.switch("a", 5, "b", 6)), (T0 + 25, S.switch("b", 6, "c", 7)), (T0 + 60, S.switch("c", 7, "d", 8))]
    page = S.Page(ev, pad_after=1)
    td = parse(tmp_path, ev, pages=[page], window=(T0, T0 + 100))
    assert seg_list(td) == [
        (T0, T0 + 10, "a"),
        (T0 + 10, T0 + 25, "b"),
        (T0 + 25, T0 + 60, "c"),
        (T0 + 60, T0 + 100, "d"),
    ]


def test_large_events_use_a_length_word(tmp_path: Path) -> None:
    name = "x" * 120  # > 112 data bytes: type_len 0
    ev = [(T0 + 10, S.irq_entry(42, name, 0)), (T0 + 20, S.irq_exit(42, 0))]
    td = parse(tmp_path, ev, window=(T0, T0 + 30))
    (irq,) = find(td, "irq", name)
    assert (irq["start_tsc"], irq["end_tsc"]) == (T0 + 10, T0 + 20)


def test_missed_events_open_a_gap_and_are_counted(tmp_path: Path) -> None:
    p1 = S.Page([(T0 + 10, S.switch("a", 5, "b", 6)), (T0 + 20, S.softirq_entry(1, 6))])
    # events were lost here: the softirq's exit among them
    p2 = S.Page(
        [(T0 + 500, S.local_timer_entry(6)), (T0 + 510, S.local_timer_exit(6)), (T0 + 520, S.switch("b", 6, "c", 7))],
        missed=17,
    )
    p3 = S.Page([(T0 + 900, S.switch("c", 7, "d", 8))], missed=-1)  # flag only: at least one
    td = parse(tmp_path, [], pages=[p1, p2, p3], window=(T0, T0 + 1000))
    check_partition(td)
    assert td.lost_by_cpu == {CPU: 18} and td.lost_events == 18
    (soft,) = find(td, "softirq", "TIMER")
    assert (soft["end_tsc"], soft["clipped"]) == (T0 + 20, True)  # closed at the last event seen
    segs = seg_list(td)
    assert not any(s < T0 + 500 and e > T0 + 20 for s, e, _ in segs)  # the gap is uncovered
    assert (T0 + 500, T0 + 510, "local_timer") in segs
    # after the gap the running task is known from the first switch (prev = "b")
    assert (T0 + 510, T0 + 520, "b") in segs


def test_a_switch_the_kernel_did_not_record_is_repaired_from_the_next_events_task(tmp_path: Path) -> None:
    """On the 6.18 guest most switches out of idle are missing from the ring buffer and counted
    nowhere; real-time throttling then made idle own every later detour of a spinning probe.
    The next event's common_pid proves who runs: the switch is placed there and counted."""
    ev = [
        (T0 + 100, S.switch("probe", 50, "swapper/1", 0)),  # throttled: idle runs
        # (swapper/1 -> probe at ~T0 + 300 was not recorded)
        (T0 + 400, S.local_timer_entry(50)),  # the tick interrupts the probe
        (T0 + 450, S.local_timer_exit(50)),
        (T0 + 700, S.switch("probe", 50, "kworker/1:2", 77)),
    ]
    td = parse(tmp_path, ev, window=(T0, T0 + 1000))
    check_partition(td)
    segs = seg_list(td)
    assert (T0 + 100, T0 + 400, "swapper/1") in segs  # idle up to the latest the switch can be
    assert (T0 + 450, T0 + 700, "probe") in segs  # named from its next switch
    assert td.counts["cpus"][str(CPU)]["missed_switches"] == 1
    (idle,) = find(td, "thread", "swapper/1")
    assert (idle["end_tsc"], idle["clipped"]) == (T0 + 400, True)


def test_unnamed_task_gets_its_comm_from_comms_file_or_pid(tmp_path: Path) -> None:
    ev = [(T0 + 10, S.local_timer_entry(4242)), (T0 + 20, S.local_timer_exit(4242))]
    d = tmp_path / "trace"
    S.write_trace(d, {CPU: S.paginate(ev)}, window=(T0, T0 + 30))
    assert find(parse_trace(d), "thread", "pid 4242")
    (d / "comms.txt").write_text("4242 rsyslogd\n")
    (t,) = find(parse_trace(d), "thread", "rsyslogd")
    assert (t["start_tsc"], t["end_tsc"], t["clipped"]) == (T0, T0 + 30, True)


def test_lost_events_take_the_larger_of_overrun_and_page_counts() -> None:
    counts = {"cpus": {"1": {"missed_stored": 80, "missed_unknown_pages": 1}, "2": {"missed_stored": 5}}}
    stats = {"1": {"overrun": 100, "dropped_events": 3, "commit_overrun": 1}, "2": {"overrun": 0}}
    assert lost_per_cpu(counts, stats) == {1: 104, 2: 5}
    assert lost_per_cpu(counts, {}) == {1: 81, 2: 5}


def test_a_scan_counts_what_a_parse_counts_of_events_pages_and_markers(tmp_path: Path) -> None:
    """A scan runs no stack machine (traceparse.c scan_event): its counts of events, pages and losses, its
    first and last events, markers and function addresses are the full parse's; the pids it lists for
    jitterscope to look up are a superset of the parse's; it has no activity or segment counts."""
    import json

    from jitterscope.tracing.parse import run_parser

    ev = [
        (T0 + 50, S.local_timer_exit(7)),  # exits before their entries: retro_open re-owns segments
        (T0 + 60, S.nmi(0xFFFFFFFF81000000, 5, 7)),
        (T0 + 80, S.softirq_exit(3, 7)),
        (T0 + 90, S.softirq_entry(1, 7)),
        (T0 + 95, S.softirq_exit(1, 7)),
        (T0 + 120, S.switch("app", 7, "swapper/1", 0)),
        (T0 + 130, S.irq_entry(11, "virtio0", 0)),
        (T0 + 140, S.irq_exit(11, 0)),
        (T0 + 150, S.switch("swapper/1", 0, "app", 7)),
    ]
    pages = S.paginate(ev)
    S.write_trace(tmp_path / "trace", {CPU: pages, CPU + 1: S.paginate(ev[2:])})
    for scan in (True, False):
        (tmp_path / str(scan)).mkdir()
        run_parser(tmp_path / "trace", tmp_path / str(scan), scan=scan)
    scanned, parsed = (json.loads((tmp_path / f"{s}" / "counts.json").read_text()) for s in (True, False))
    assert parsed["segments"] == 15 and "segments" not in scanned and "activity" not in scanned
    assert scan_view(scanned) == scan_view(parsed)
    assert scanned["addresses"] == parsed["addresses"] != []  # the NMI's handler
    assert set(parsed["unknown_pids"]) <= set(scanned["unknown_pids"]) == {7}  # app ran before its switch


SCANNED = ("events", "pages", "missed_pages", "missed_stored", "missed_unknown_pages", "first_tsc", "last_tsc")


def scan_view(counts: dict) -> dict:
    """What a scan counts, of a scan's or a parse's counts.json."""
    return {
        "page_size": counts["page_size"],
        "markers": counts["markers"],
        "cpus": {c: {k: v[k] for k in SCANNED} for c, v in counts["cpus"].items()},
    }


def test_a_trace_page_size_that_is_not_the_systems_parses_alike(tmp_path: Path) -> None:
    """The parser maps the capture a window of 256 trace pages at a time; with 4104-byte pages the second window
    starts mid system page (a mapping cannot), and the pages still parse as the same events in 4096-byte ones."""
    events = [
        (T0 + 1000 * i, S.switch("a", 10, "b", 11) if i % 2 else S.switch("b", 11, "a", 10)) for i in range(40_000)
    ]
    got = {}
    for size in (S.PAGE_SIZE, 4104):
        trace = tmp_path / f"pages{size}"
        S.write_trace(trace, {CPU: []})
        header = {**S.HEADER, "data": [16, size - 16]}
        S.formats.save(trace, {**S.info(), "header_page": header})
        pages = S.paginate(events, page_size=size)
        (trace / f"cpu{CPU}.raw").write_bytes(b"".join(S.encode_page(p, size) for p in pages))
        assert len(pages) > 2 * 256  # more than two windows
        got[size] = parse_trace(trace).activity.to_pylist()
    assert got[4104] == got[S.PAGE_SIZE] and len(got[4104]) > 20_000


def _scan_and_parse(trace: Path, out: Path) -> tuple[dict, dict]:
    from jitterscope.tracing.parse import run_parser

    got = []
    for scan in (True, False):
        (out / str(scan)).mkdir(parents=True)
        got.append(run_parser(trace, out / str(scan), scan=scan))
    return got[0], got[1]


def test_a_scan_holds_time_that_runs_back_as_a_parse_does(tmp_path: Path) -> None:
    """An absolute time stamp earlier than the last event (a clock step in the ring buffer): a parse holds
    the time at the last event, and so does a scan, whose markers and last event are the window's."""
    import struct

    def record(delta: int, payload: bytes) -> bytes:
        data = payload + b"\0" * (-len(payload) % 4)
        return struct.pack("<I", (len(data) // 4) | (delta << 5)) + data

    back = T0 - 100  # TIME_STAMP (type 31): the absolute time, split 27 + 32 bits
    data = (
        record(0, S.irq_entry(3, "x", 0))
        + struct.pack("<II", 31 | ((back & ((1 << 27) - 1)) << 5), back >> 27)
        + record(0, S.marker("jitterscope-start 1", 0))
        + record(5, S.irq_exit(3, 0))
    )
    S.write_trace(tmp_path / "trace", {CPU: [S.Page([(T0, S.irq_entry(3, "x", 0))])]})
    page = struct.pack("<QQ", T0, len(data)) + data
    (tmp_path / "trace" / f"cpu{CPU}.raw").write_bytes(page + b"\0" * (S.PAGE_SIZE - len(page)))
    scanned, parsed = _scan_and_parse(tmp_path / "trace", tmp_path / "out")
    assert scan_view(scanned) == scan_view(parsed)
    assert [m["tsc"] for m in scanned["markers"]] == [T0] and scanned["cpus"][str(CPU)]["last_tsc"] == T0 + 5


def test_the_pids_a_scan_lists_cover_the_parses_and_name_real_processes(tmp_path: Path) -> None:
    """A thread whose switch out has an empty comm stays unnamed in a parse: a scan lists it too.  Pids
    of corrupt records (0 and below) are not listed, and a pid is listed once."""
    ev = [(T0 + 10 * i, S.irq_entry(3, "x", -1 if i % 2 else 5)) for i in range(40)]
    ev += [(T0 + 500, S.switch("", 9, "swapper/1", 0))]  # 9 was never switched in: a missed switch
    S.write_trace(tmp_path / "trace", {CPU: S.paginate(ev)})
    scanned, parsed = _scan_and_parse(tmp_path / "trace", tmp_path / "out")
    assert 9 in parsed["unknown_pids"] and set(parsed["unknown_pids"]) - {-1} <= set(scanned["unknown_pids"])
    assert scanned["unknown_pids"] == [5, 9]


def test_a_comm_no_thread_takes_is_no_string_of_the_run(tmp_path: Path) -> None:
    """comms.txt lists more pids than a parse needs (a scan's are a superset): only a name a thread takes
    becomes one of the run's strings."""
    ev = [(T0 + 10, S.irq_entry(3, "x", 4242)), (T0 + 20, S.irq_exit(3, 4242))]
    S.write_trace(tmp_path / "trace", {CPU: S.paginate(ev)})
    (tmp_path / "trace" / "comms.txt").write_text("4242 rsyslogd\n77 unused-daemon\n")
    td = parse_trace(tmp_path / "trace")
    names = set(td.activity.column("name").to_pylist())
    assert "rsyslogd" in names and "unused-daemon" not in names
    out = tmp_path / "raw"
    out.mkdir()
    from jitterscope.tracing.parse import run_parser

    run_parser(tmp_path / "trace", out)
    assert b"unused-daemon" not in (out / "strings.bin").read_bytes()
