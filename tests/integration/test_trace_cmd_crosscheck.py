"""Our ring-buffer page parser (native/traceparse.c) against libtraceevent, the kernel's own.

One real capture (`jitterscope measure`, raw pages from trace_pipe_raw) is decoded twice:
by `jitterscope-traceparse --events` and by `trace-cmd report` (libtraceevent) on a
trace.dat that `trace-cmd restore` builds around the very same page files.  Both must
list the same events, per CPU, in the same order, at the same timestamps (raw TSC: the
x86-tsc clock), with the same values of every field the parser uses, and count the same
lost events (pages flagged after an overrun).  Three captures: a real measure run, one
with gaps that need time-extend records, one whose ring overflowed.  A kernel change
in the page or event format is caught here before it silently misattributes noise.
`make packages` installs trace-cmd where apt can; without it this test skips.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jitterscope.journal import Journal
from jitterscope.native_bin import native_bin
from jitterscope.sysinfo import online_cpus
from jitterscope.tracing.session import TraceSession

from .conftest import jitterscope, probed_cpu, tracing_reason

TRACE_CMD = shutil.which("trace-cmd")
pytestmark = [
    pytest.mark.skipif(tracing_reason() is not None, reason=str(tracing_reason())),
    pytest.mark.skipif(TRACE_CMD is None, reason="trace-cmd not installed (make packages installs it)"),
]

# trace-cmd report -t -R:  "comm-pid [cpu] sec.nsec: event: field=value ..." (raw field values).
LINE = re.compile(
    r"^\s*(?P<comm>.*)-(?P<pid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<sec>\d+)\.(?P<nsec>\d{9}):"
    r"\s+(?P<event>\w+):\s*(?P<fields>.*)$"
)
# Pages that say events were lost before them: "CPU:1 [55438 EVENTS DROPPED]" (or no count when the page has none).
LOST = re.compile(r"CPU:\s*(\d+) \[(\d+ )?EVENTS DROPPED\]")
STRINGS = {"prev_comm", "next_comm", "name", "buf"}


def _unescape(s: str) -> str:
    return re.sub(r"\\x([0-9a-f]{2})", lambda m: chr(int(m.group(1), 16)), s)


def ours(trace_dir: Path, out: Path, formats: dict) -> tuple[list[tuple], dict[int, tuple[int, int]]]:
    """Every event traceparse decoded: (cpu, ts, event name, {field: value}); and per CPU the events the
    pages say were lost and the pages that say so without a count."""
    names = {e["id"]: e["name"] for e in formats["events"].values()}
    out.mkdir()
    subprocess.run(
        [str(native_bin("jitterscope-traceparse")), "--events", str(out / "events.tsv"), str(trace_dir), str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    events = []
    for line in (out / "events.tsv").read_text().splitlines():
        cpu, ts, eid, *kv = line.split("\t")
        fields = {k: _unescape(v) for k, v in (x.split("=", 1) for x in kv)}
        events.append((int(cpu), int(ts), names[int(eid)], fields))
    counts = json.loads((out / "counts.json").read_text())["cpus"]
    return events, {int(c): (v["missed_stored"], v["missed_unknown_pages"]) for c, v in counts.items()}


def trace_cmd(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(TRACE_CMD), *args], check=True, capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """trace.dat's headers: page and event formats and kallsyms of this kernel (the captures' own).  trace-cmd
    (restore -c, and restore -i too) mounts tracefs itself when it is not mounted, and leaves it mounted: while this
    module runs, tracefs is mounted the way jitterscope mounts it, through a journal, and unmounted at its end."""
    from jitterscope.tracing.tracefs import ensure_tracefs

    work = tmp_path_factory.mktemp("head")
    with Journal("test-crosscheck-tracefs") as journal:
        if ensure_tracefs(journal) is None:
            pytest.skip("tracefs is not mounted and cannot be mounted here")
        trace_cmd("restore", "-c", "-o", "head.dat", cwd=work)
        yield work / "head.dat"


def theirs(trace_dir: Path, work: Path, head: Path) -> tuple[list[tuple], dict[int, tuple[int, int]], str]:
    """The same page files through trace-cmd restore + report (libtraceevent)."""
    raw = []
    for cpu in range(max(online_cpus()) + 1):  # restore takes one file per CPU, in order
        f = trace_dir / f"cpu{cpu}.raw"
        if not f.exists():
            f = work / f"empty{cpu}.raw"
            f.write_bytes(b"")
        raw.append(str(f))
    trace_cmd("restore", "-i", str(head), "-o", "trace.dat", *raw, cwd=work)
    text = trace_cmd("report", "-i", "trace.dat", "-t", "-R", cwd=work).stdout
    events, lost = [], {}
    for line in text.splitlines():
        if m := LOST.search(line):
            n, unknown = lost.get(int(m.group(1)), (0, 0))
            lost[int(m.group(1))] = (n + int(m.group(2)), unknown) if m.group(2) else (n, unknown + 1)
            continue
        m = LINE.match(line)
        if not m:
            continue
        fields = {"common_pid": m.group("pid")}
        body = m.group("fields")
        if "buf=" in body:  # a print's buf is the rest of the line, spaces and all
            body, fields["buf"] = body.split("buf=", 1)
        for k, v in re.findall(r"(\w+)=(\S*)", body):
            fields[k] = v
        events.append(
            (int(m.group("cpu")), int(m.group("sec")) * 10**9 + int(m.group("nsec")), m.group("event"), fields)
        )
    return events, lost, text


def _same_value(ours_v: str, theirs_v: str, key: str, size: int, symbols: dict[int, str]) -> bool:
    if key in STRINGS:
        return ours_v.rstrip("\n") == theirs_v.rstrip("\n")
    # a function trace-cmd named: the trace's symbols must agree
    if not re.fullmatch(r"-?(0x[0-9a-f]+|\d+)", theirs_v):
        return symbols.get(int(ours_v)) == theirs_v
    mask = (1 << (8 * size)) - 1
    return int(ours_v, 0) & mask == int(theirs_v, 0) & mask


def kernel_symbols(trace: Path) -> dict[int, str]:
    """The symbols the capture saved (symbols.txt), else the running kernel's."""
    syms = {}
    for path in (Path("/proc/kallsyms"), trace / "symbols.txt"):  # the capture's own names win
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2:
                syms[int(parts[0], 16)] = parts[-1] if path.name == "symbols.txt" else parts[2]
    return syms


def assert_same_decoding(trace: Path, work: Path, head: Path) -> list[tuple]:
    """Decode `trace` both ways and compare event by event; return libtraceevent's events."""
    formats = json.loads((trace / "formats.json").read_text())
    symbols = kernel_symbols(trace)
    sizes = {e["name"]: {k: f[1] for k, f in e["fields"].items()} for e in formats["events"].values()}
    mine, my_lost = ours(trace, work / "parsed", formats)
    (work / "tc").mkdir()
    ref, ref_lost, text = theirs(trace, work / "tc", head)
    assert ref, text[:2000]
    for c in sorted({e[0] for e in ref} | {e[0] for e in mine}):
        a = [e for e in mine if e[0] == c]
        b = [e for e in ref if e[0] == c]
        assert len(a) == len(b), f"CPU {c}: traceparse decoded {len(a)} events, libtraceevent {len(b)}"
        for x, y in zip(a, b):
            assert x[1:3] == y[1:3], f"CPU {c}: {x} vs {y}"
            for key, value in x[3].items():
                assert key in y[3], f"{y[2]} lacks {key} in trace-cmd's output: {y}"
                assert _same_value(value, y[3][key], key, sizes[y[2]].get(key, 8), symbols), f"{key}: {x} vs {y}"
    assert {c: n for c, n in my_lost.items() if n != (0, 0)} == ref_lost
    return ref


@pytest.mark.slow
def test_a_measure_capture_decodes_as_libtraceevent_decodes_it(tmp_path: Path, head: Path) -> None:
    run = tmp_path / "run"
    jitterscope(
        "measure", "--cpus", str(probed_cpu()), "--duration", "1s", "--no-report", "--out", str(run), check=True
    )
    ref = assert_same_decoding(run / "trace", tmp_path, head)
    assert len(ref) > 100  # a second of the tick alone is hundreds of events
    assert {e[2] for e in ref} >= {"sched_switch", "local_timer_entry", "local_timer_exit", "print"}


def test_gaps_longer_than_an_event_delta_decode_the_same(tmp_path: Path, head: Path) -> None:
    """Events 100 ms apart (tracing paused between markers) need a time extend: 27 bits of
    TSC ticks cover only ~55 ms.  A busy CPU's tick never leaves such a gap in a measure run."""
    cpu = probed_cpu()
    trace = tmp_path / "trace"
    old = os.sched_getaffinity(0)
    with Journal("test-crosscheck") as journal, TraceSession([cpu], trace, journal, buffer_kb=256) as session:
        assert session.instance is not None
        try:
            os.sched_setaffinity(0, {cpu})  # markers count on the traced CPU only
            for i in range(3):
                (session.instance / "tracing_on").write_text("0")
                time.sleep(0.1)
                (session.instance / "tracing_on").write_text("1")
                (session.instance / "trace_marker").write_text(f"jitterscope-gap {i}")
        finally:
            os.sched_setaffinity(0, old)
    ref = assert_same_decoding(trace, tmp_path, head)
    ts = [e[1] for e in ref if e[0] == cpu]
    assert max(b - a for a, b in itertools.pairwise(ts)) > 2**27
    assert sum(e[2] == "print" and "gap" in e[3]["buf"] for e in ref) == 3


def test_lost_events_are_counted_as_libtraceevent_counts_them(tmp_path: Path, head: Path) -> None:
    """Markers flooded into an 8 KiB ring (not grown for the rate) while the session's reader is stopped
    (SIGSTOP), so the ring overwrites pages and the pages read afterwards carry missed-event counts."""
    cpu = probed_cpu()
    trace = tmp_path / "trace"
    old = os.sched_getaffinity(0)
    with Journal("test-crosscheck") as journal, TraceSession([cpu], trace, journal, buffer_kb=8, grow=False) as session:
        assert session.instance is not None
        reader = int(session.info["reader_pid"])
        fd = os.open(session.instance / "trace_marker", os.O_WRONLY)
        os.kill(reader, signal.SIGSTOP)
        try:
            os.sched_setaffinity(0, {cpu})
            msg = b"x" * 1000
            for _ in range(300):
                os.write(fd, msg)
        finally:
            os.sched_setaffinity(0, old)
            os.close(fd)
            os.kill(reader, signal.SIGCONT)
    assert_same_decoding(trace, tmp_path, head)
    counts = json.loads((tmp_path / "parsed" / "counts.json").read_text())["cpus"][str(cpu)]
    assert counts["missed_pages"] >= 1 and counts["missed_stored"] > 0
