"""jitterscope-traceparse writes its records out while it parses (spill), so its memory does not grow with
the run's length; the files are those of one write at the end, whatever the moment of each spill.

The trace mixes everything whose records stay open or change after they are made: a span that begins
inside an IRQ, a softirq and a work item (their exits seen first, their records revised until the first
context switch), a thread whose name is learnt only at its switch-out, kworkers switched out mid-item,
NMIs, hard IRQs inside softirqs, hrtimer callbacks, a lost-events gap that opens a new span, and a
long-running thread slice with every context above it written out before it ends."""

from __future__ import annotations

import os
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from jitterscope.native_bin import native_bin
from jitterscope.tracing.parse import scratch_parent
from jitterscope.tracing.records import ACTIVITY_DTYPE, PIECE_DTYPE
from tests.support import synth as S

pytestmark = S.needs_parser()

T0 = 1_000_000_000
NEVER = str(1 << 40)  # --spill: more rows than any trace here, so one write at the end
KW = 300  # a kworker's pid


def _cycle(t: int, k: int) -> list[tuple[int, bytes]]:
    """One round of activity, 100 us long, starting at t with the long-running task `long` (pid 200)."""
    ev = [
        (t + 1_000, S.local_timer_entry(200)),
        (t + 2_000, S.softirq_entry(1, 200)),
        (t + 2_500, S.irq_entry(24, "eth0", 200)),
        (t + 3_000, S.irq_exit(24, 200)),
        (t + 4_000, S.hrtimer_entry(0xABC0 + k % 3, 0xFFFF0000 + k % 5, 200)),
        (t + 4_400, S.hrtimer_exit(0xABC0 + k % 3, 200)),
        (t + 5_000, S.softirq_exit(1, 200)),
        (t + 6_000, S.local_timer_exit(200)),
        (t + 7_000, S.nmi(0xFFFF1000, 800, 200)),
    ]
    if k % 4 == 0:  # a kworker runs a work item, is switched out in the middle and comes back
        ev += [
            (t + 10_000, S.switch("long", 200, "kworker/1:1", KW)),
            (t + 11_000, S.work_start(0x5000 + k % 7, 0xFFFF2000, KW)),
            (t + 12_000, S.switch("kworker/1:1", KW, "other", 201)),
            (t + 14_000, S.switch("other", 201, "kworker/1:1", KW)),
            (t + 15_000, S.work_end(0x5000 + k % 7, 0xFFFF2000, KW)),
            (t + 16_000, S.switch("kworker/1:1", KW, "long", 200)),
        ]
    if k % 9 == 0:  # a task seen only through its events: a switch the kernel did not record
        ev += [(t + 20_000, S.irq_entry(25, "nvme", 400 + k % 2)), (t + 20_500, S.irq_exit(25, 400 + k % 2))]
        ev += [(t + 21_000, S.switch(f"t{k % 2}", 400 + k % 2, "long", 200))]
    return ev


def _trace(path: Path, cycles: int) -> Path:
    head = [  # the capture starts inside a work item, a softirq and an IRQ of an unnamed task
        (T0, S.irq_exit(7, 250)),
        (T0 + 500, S.softirq_exit(3, 250)),
        (T0 + 900, S.work_end(0x7777, 0xFFFF3000, 250)),
        # a task seen only in its events and never named by a switch: "pid 450", named at the end
        (T0 + 950, S.irq_entry(26, "usb", 450)),
        (T0 + 960, S.irq_exit(26, 450)),
    ]
    timer = (S.local_timer_entry(250), S.local_timer_exit(250))
    head += [(T0 + 1_000 + 10 * i, timer[i % 2]) for i in range(400)]
    head += [(T0 + 6_000, S.switch("mystery", 250, "long", 200))]
    body: list[tuple[int, bytes]] = []
    for k in range(cycles):
        body += _cycle(T0 + 10_000 + k * 100_000, k)
    half = len(S.paginate(head + body)) // 2
    pages = S.paginate(head + body)
    pages[half] = S.Page(pages[half].events, missed=5)  # lost events: the span ends, a new one begins
    # a second CPU (the same pages): a whole parse spills one CPU's records while it parses the next
    return S.write_trace(path, {1: pages, 2: pages}, symbols={0xFFFF0000 + i: f"cb{i}" for i in range(5)})


def _parse(trace: Path, out: Path, *flags: str) -> Path:
    out.mkdir()
    cmd = [str(native_bin("jitterscope-traceparse")), *flags, str(trace), str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def _detours(path: Path, cycles: int, overlapping: bool = False) -> Path:
    """Detours in ns since T0 (one tick per ns): one per round over its softirq, and a long one over many;
    `overlapping`: as a pipeline's iterations in flight (pipeline/late.py), each also over the next two rounds,
    the long one over thirty, some of zero length and some starting together, sorted by start only."""
    starts = np.arange(cycles) * 100_000 + 10_000 + 1_500
    d = np.column_stack((starts, starts + (250_000 if overlapping else 5_000)))
    d[cycles // 3] = [d[cycles // 3][0], d[cycles // 3][0] + 30 * 100_000]
    if overlapping:
        d[::7, 1] = d[::7, 0]  # zero length
        d = np.concatenate([d, d[5::11] + [0, 40_000]])  # a second window from the same start
        d = d[np.argsort(d[:, 0], kind="stable")]
    else:
        keep = np.ones(len(d), bool)
        keep[cycles // 3 + 1 : cycles // 3 + 31] = False  # disjoint
        d = d[keep]
    d.astype("<i8").tofile(path)
    return path


def _pieces(out: Path) -> dict[tuple[int, int, int, int], tuple[int, int]]:
    """pieces.bin summed per (detour, owner's kind, name, pid), earliest start kept: what the analysis makes
    of it (a spill may split one owner's sum in two)."""
    acts = np.fromfile(out / "activity.bin", ACTIVITY_DTYPE)
    sums: dict[tuple[int, int, int, int], list[int]] = defaultdict(lambda: [0, 1 << 62])
    for p in np.fromfile(out / "pieces.bin", PIECE_DTYPE):
        o = acts[p["owner"]]
        s = sums[(int(p["detour"]), int(o["kind"]), int(o["name"]), int(o["pid"]))]
        s[0] += int(p["ns"])
        s[1] = min(s[1], int(p["start_ns"]))
    return {k: (v[0], v[1]) for k, v in sums.items()}


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _trace(tmp_path_factory.mktemp("spill") / "trace", 3_000)


@pytest.mark.parametrize("spill", ["1", "97", "5000"])  # spills are checked after every page
@pytest.mark.parametrize("mode", [[], ["--cpu", "1"], ["--scan"]])
def test_the_files_do_not_depend_on_when_records_are_spilled(trace: Path, tmp_path: Path, spill: str, mode: list[str]):
    once = _parse(trace, tmp_path / "once", "--spill", NEVER, *mode)
    often = _parse(trace, tmp_path / "often", "--spill", spill, *mode)
    names = sorted(p.name for p in once.iterdir())
    assert names == sorted(p.name for p in often.iterdir())
    assert "counts.json" in names and (mode == ["--scan"] or "activity.bin" in names)
    for name in names:
        assert (once / name).read_bytes() == (often / name).read_bytes(), name


@pytest.mark.parametrize("overlapping", [False, True])
@pytest.mark.parametrize("spill", ["1", "97", "5000"])
def test_detours_are_attributed_alike_whenever_records_are_spilled(
    trace: Path, tmp_path: Path, spill: str, overlapping: bool
):
    det = _detours(tmp_path / "detours.bin", 3_000, overlapping)
    flags = ["--cpu", "1", "--detours", str(det), "--t0", str(T0), "--ns-per-tick", "1.0"]
    once = _parse(trace, tmp_path / "once", "--spill", NEVER, *flags)
    often = _parse(trace, tmp_path / "often", "--spill", spill, *flags)
    for name in ("activity.bin", "containers.bin", "strings.bin", "counts.json"):
        assert (once / name).read_bytes() == (often / name).read_bytes(), name
    assert _pieces(once) == _pieces(often)
    containers = np.fromfile(once / "containers.bin", "<u4")
    kinds = np.fromfile(once / "activity.bin", ACTIVITY_DTYPE)["kind"]
    assert len(containers) == int(np.isin(kinds, [4, 5]).sum()) > 1000  # every work item and timer
    assert len(_pieces(once)) > 3_000


def test_memory_does_not_grow_with_the_length(tmp_path: Path):
    short, long = _trace(tmp_path / "short", 12_000), _trace(tmp_path / "long", 36_000)
    traces = (("s", short), ("l", long))
    peak = {n: S.parser_peak_kib(t, tmp_path / f"out{n}", "--cpu", "1", "--spill", "4096") for n, t in traces}
    grows = {n: S.parser_peak_kib(t, tmp_path / f"all{n}", "--cpu", "1", "--spill", NEVER) for n, t in traces}
    rows = len(np.fromfile(tmp_path / "alll" / "activity.bin", ACTIVITY_DTYPE)) - len(
        np.fromfile(tmp_path / "alls" / "activity.bin", ACTIVITY_DTYPE)
    )
    # held to the end, the longer trace's extra records (40 B) and segments (24 B) are resident: the check sees
    assert grows["l"] - grows["s"] > rows * 64 / 1024 * 0.8, grows
    assert peak["l"] - peak["s"] < 0.05 * (grows["l"] - grows["s"]), (peak, grows)


@pytest.mark.skipif(
    not (os.access("/dev/shm", os.W_OK) and os.access("/var/tmp", os.W_OK)), reason="/dev/shm or /var/tmp not writable"
)
def test_the_records_of_a_long_run_go_to_disk_not_to_memory():
    mib = 1 << 20
    assert scratch_parent([100 * mib], 1) == "/dev/shm"  # at most 100 MiB of files: tmpfs, the fastest
    assert scratch_parent([100 * mib] * 8, 2) == "/dev/shm"  # two CPUs at a time
    assert scratch_parent([100 * mib] * 8, 8) == "/var/tmp"  # eight at a time: 800 MiB
    assert scratch_parent([30 * mib] * 63 + [800 * mib], 2) == "/var/tmp"  # one busy CPU among quiet ones


def test_time_that_runs_back_after_lost_events_is_held_at_the_last_event(tmp_path: Path):
    """A page after lost events stamped before the last event seen (a corrupt or reordered capture): time is
    held where it was, so the segments stay in order and a detour's attribution does not depend on spills."""

    def timer(t: int) -> list[tuple[int, bytes]]:  # an hrtimer callback inside the local timer interrupt
        return [
            (t, S.local_timer_entry(200)),
            (t + 100, S.hrtimer_entry(0xABC, 0xFFFF0000, 200)),
            (t + 200, S.hrtimer_exit(0xABC, 200)),
            (t + 300, S.local_timer_exit(200)),
        ]

    before = S.paginate(
        [(T0 - 10, S.switch("a", 100, "b", 200))] + [e for k in range(8_000) for e in timer(T0 + 1_000 * k)]
    )
    after = S.paginate([e for k in range(100) for e in timer(T0 + 1_000 * k + 500)])  # back to T0
    after[0] = S.Page(after[0].events, missed=3)
    trace = S.write_trace(tmp_path / "trace", {1: before + after}, symbols={0xFFFF0000: "cb"})
    det = tmp_path / "detours.bin"
    np.array([(0, 10), (7_999_000, 8_000_500)], "<i8").tofile(det)
    flags = ["--cpu", "1", "--detours", str(det), "--t0", str(T0), "--ns-per-tick", "1.0"]
    once = _parse(trace, tmp_path / "once", "--spill", NEVER, *flags)
    often = _parse(trace, tmp_path / "often", "--spill", "1", *flags)
    for name in ("activity.bin", "containers.bin", "strings.bin", "counts.json"):
        assert (once / name).read_bytes() == (often / name).read_bytes(), name
    assert _pieces(once) == _pieces(often)
    starts = np.fromfile(once / "activity.bin", ACTIVITY_DTYPE)["start_tsc"]
    assert np.all(np.diff(starts) >= 0)  # rows in the order they opened, none before the time already seen


@pytest.mark.parametrize("value", ["0", "-5", "abc", "5x", ""])
def test_a_bad_spill_count_is_refused_with_the_usage(trace: Path, tmp_path: Path, value: str):
    cmd = [str(native_bin("jitterscope-traceparse")), "--spill", value, str(trace), str(tmp_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert p.returncode == 2 and p.stderr.startswith("usage: jitterscope-traceparse"), p.stderr
    assert not any(tmp_path.iterdir())  # nothing written
