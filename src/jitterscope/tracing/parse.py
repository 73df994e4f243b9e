"""Raw trace directory → activity intervals, exclusive segments, lost events.

The heavy lifting is native (jitterscope-traceparse); this module runs it on a
trace directory written by `TraceSession` and wraps its output.  Times are raw
TSC values (the x86-tsc trace clock, the probe's clock too).

Lost events, per CPU, without double counting:
    lost = max(overrun, page_missed) + dropped_events + commit_overrun
`overrun` (per_cpu/cpuN/stats) counts events the writer overwrote; the
missed-events counts stored on the pages we read describe those same
overwritten events (the kernel derives them from the overrun counter), so the
two are alternatives, not a sum: the larger wins (pages whose count was not
stored add one each, a lower bound).  `dropped events` (buffer full in
non-overwrite mode, or a too-large event) and `commit overrun` (nested writers
wrapping the buffer) are disjoint from overrun and add.  Without stats.json
(a killed run) only the page counts are available.
"""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np
import pyarrow as pa

from jitterscope import boundedio, journal
from jitterscope.errors import JitterscopeError
from jitterscope.native_bin import TRACEPARSE_PROGRAM, native_bin

if TYPE_CHECKING:  # session.py runs the parser: a type only, no import cycle
    from jitterscope.tracing.session import SessionInfo
from jitterscope.tracing.records import (
    ACTIVITY_DTYPE,
    CLIPPED_END,
    CLIPPED_START,
    KINDS,
    PREEMPTED,
    SEGMENT_DTYPE,
)

PARSER = TRACEPARSE_PROGRAM
ACTIVITY_SCHEMA = pa.schema(
    [
        ("cpu", pa.int32()),
        ("start_tsc", pa.int64()),
        ("end_tsc", pa.int64()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("depth", pa.int16()),
        ("detail", pa.string()),
        ("pid", pa.int32()),
        ("clipped", pa.bool_()),
        ("entered", pa.bool_()),  # the trace saw its entry (not clipped at the start): an event of its source
        ("preempted", pa.bool_()),
    ]
)


class CpuCounts(TypedDict, total=False):
    """One CPU's entry in the parser's counts.json (traceparse.c write_counts); a scan's has no unmatched,
    truncated or missed_switches (it runs no stack machine)."""

    events: int
    pages: int
    missed_pages: int
    missed_stored: int
    missed_unknown_pages: int
    unmatched: int
    truncated: int
    missed_switches: int
    first_tsc: int
    last_tsc: int


class Marker(TypedDict):
    """A trace_marker line the parser found (jitterscope-start, jitterscope-stop, ...)."""

    cpu: int
    tsc: int
    text: str


class ParserCounts(TypedDict, total=False):
    """counts.json as jitterscope-traceparse writes it (keyed by CPU number as text); a merged analysis
    holds only `cpus` and `markers`, a scan no `activity` or `segments`, and its `unknown_pids` are a superset
    of a parse's (each listed once)."""

    page_size: int
    activity: int
    segments: int
    cpus: dict[str, CpuCounts]
    markers: list[Marker]
    addresses: list[str]
    unknown_pids: list[int]


@dataclass
class TraceData:
    activity: pa.Table  # ACTIVITY_SCHEMA; row order is what segments' owner indexes
    segments: np.ndarray  # SEGMENT_DTYPE fields cpu, start_tsc, end_tsc, owner; sorted by (cpu, start)
    lost_events: int
    lost_by_cpu: dict[int, int]
    n_events: int
    events_by_cpu: dict[int, int] = field(default_factory=dict)
    markers: list[Marker] = field(default_factory=list)
    window: tuple[int, int] | None = None  # capture start/stop TSC, when known
    tsc_hz: float | None = None
    counts: ParserCounts = field(default_factory=lambda: ParserCounts())  # the parser's raw counters

    @property
    def missed_switches(self) -> int:
        """Context switches the kernel did not record, repaired from the next event's task (traceparse.c)."""
        return sum(int(c.get("missed_switches", 0)) for c in self.counts.get("cpus", {}).values())


@dataclass
class Detours:
    """One CPU's detours for the parser to attribute (--detours): `path` holds int64 (start, end)
    pairs in ns since `t0_tsc`, sorted; `ns_per_tick` converts ticks as measure/tsc.py since_ns does."""

    path: Path
    t0_tsc: int
    ns_per_tick: float


def run_parser(
    trace_dir: Path,
    out_dir: Path,
    scan: bool = False,
    tsc_hz: float | None = None,
    window: tuple[int, int] | None = None,
    cpu: int | None = None,
    detours: Detours | None = None,
    open_end: bool = False,
) -> ParserCounts:
    """Run jitterscope-traceparse (on one CPU's capture when `cpu` is given); return its counts.json.
    With `detours` (and `cpu`) it writes their overlaps with the segments (pieces.bin) and the
    annotations' containers (containers.bin) instead of the segments."""
    cmd = [str(native_bin(PARSER))]
    if detours is not None:
        cmd += ["--detours", str(detours.path), "--t0", str(int(detours.t0_tsc))]
        cmd += ["--ns-per-tick", repr(float(detours.ns_per_tick))]
    if scan:
        cmd.append("--scan")
    if cpu is not None:
        cmd += ["--cpu", str(int(cpu))]
    if tsc_hz:
        cmd += ["--tsc-hz", repr(float(tsc_hz))]
    if window:
        cmd += ["--window", str(int(window[0])), str(int(window[1]))] + (["--open-end"] if open_end else [])
    cmd += [str(trace_dir), str(out_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise JitterscopeError(f"trace parser failed on {trace_dir}: {msg}")
    counts: ParserCounts = json.loads((out_dir / "counts.json").read_text())
    return counts


MAX_MARKERS = 64  # traceparse.c keeps this many markers of a whole scan


def trace_cpus(trace_dir: Path) -> list[int]:
    """The CPUs with a raw capture in `trace_dir`, ascending."""
    return sorted(int(p.name[3:-4]) for p in Path(trace_dir).glob("cpu*.raw") if p.name[3:-4].isdigit())


def scan(trace_dir: Path, out_dir: Path, jobs: int = 1) -> ParserCounts:
    """The parser's --scan of every CPU's capture: one process, or with `jobs` > 1 one per CPU, `jobs`
    at a time (a scan is the serial stage of analysing a killed run), their counts joined as the one
    process writes them (CPUs, markers and unknown pids in CPU order)."""
    cpus = trace_cpus(trace_dir)
    if jobs <= 1 or len(cpus) <= 1:
        return run_parser(trace_dir, out_dir, scan=True)

    def one(cpu: int) -> ParserCounts:
        d = Path(out_dir) / f"cpu{cpu}"
        d.mkdir()
        return run_parser(trace_dir, d, scan=True, cpu=cpu)

    with ThreadPoolExecutor(min(jobs, len(cpus))) as pool:  # each thread waits on its parser process
        parts = list(pool.map(one, cpus))
    addresses = dict.fromkeys(a for p in parts for a in p.get("addresses", []))
    return {
        "page_size": parts[0]["page_size"],
        "cpus": {k: v for p in parts for k, v in p["cpus"].items()},
        "markers": [m for p in parts for m in p.get("markers", [])][:MAX_MARKERS],
        "addresses": list(addresses),
        # each pid once, in CPU order, as one scan of every CPU lists them
        "unknown_pids": list(dict.fromkeys(u for p in parts for u in p.get("unknown_pids", []))),
    }


def open_ended(info: SessionInfo) -> bool:
    """Whether the window's end is not the trace's own (a killed run's, closed by the probe's end): what ran on a
    CPU after its last event is then unknown, and its last activity ends there (the parser's --open-end)."""
    return info.get("window_end") == "probe"


def session_info(trace_dir: Path) -> SessionInfo:
    saved = boundedio.read_json_or_none(trace_dir / "session.json", "trace session record")
    info: SessionInfo = saved if saved else {}
    return info


def trace_stats(trace_dir: Path) -> dict[str, dict[str, int]]:
    return boundedio.read_json_or_none(trace_dir / "stats.json", "trace statistics") or {}


def lost_per_cpu(counts: ParserCounts, stats: dict[str, dict[str, int]]) -> dict[int, int]:
    """Lost events per CPU (see the module docstring for why this is no double count)."""
    out: dict[int, int] = {}
    cpus = set(counts.get("cpus", {})) | set(stats)
    for c in cpus:
        pc = counts.get("cpus", {}).get(c, {})
        page_missed = int(pc.get("missed_stored", 0)) + int(pc.get("missed_unknown_pages", 0))
        st = stats.get(c, {})
        out[int(c)] = (
            max(int(st.get("overrun", 0)), page_missed)
            + int(st.get("dropped_events", 0))
            + int(st.get("commit_overrun", 0))
        )
    return out


def _load(path: Path, dtype: np.dtype) -> np.ndarray:
    """Map the parser's output (no copy until columns are taken out of it)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r")


# The parser's files (activity.bin and segments.bin, or codes and pieces beside activity.bin: at most a byte
# per byte of raw capture) go to tmpfs, which is memory, only while those of the CPUs parsed at once come to
# no more than SHM_BUDGET; a longer run's go to disk, so its analysis's memory stays bounded.
SHM_BUDGET = 256 << 20
SCRATCH_PER_RAW_BYTE = 1.0


def raw_bytes(trace_dir: Path, cpu: int) -> int:
    """The size of one CPU's raw capture."""
    return (Path(trace_dir) / f"cpu{cpu}.raw").stat().st_size


def scratch_parent(raw: list[int], at_once: int) -> str | None:
    """Where the parser's files for CPUs whose raw captures are `raw` bytes long, `at_once` parsed at a time,
    are kept: /dev/shm when they fit SHM_BUDGET, else /var/tmp (disk), else the default temp dir."""
    busiest = sorted(raw, reverse=True)[: max(1, at_once)]
    if sum(busiest) * SCRATCH_PER_RAW_BYTE <= SHM_BUDGET and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return "/var/tmp" if os.access("/var/tmp", os.W_OK) else None


def parse_trace(trace_dir: Path, tsc_hz: float | None = None) -> TraceData:
    """Parse a trace directory written by TraceSession into intervals and segments.

    `tsc_hz` converts NMI lengths (the kernel reports them in ns); by default
    the rate measured by the session is used.
    """
    trace_dir = Path(trace_dir)
    if not (trace_dir / "events.txt").exists():
        raise JitterscopeError(f"{trace_dir}: not a jitterscope trace (events.txt missing)")
    info = session_info(trace_dir)
    hz = tsc_hz or info.get("tsc_hz")
    w = info.get("window")
    window = (int(w[0]), int(w[1])) if w else None
    open_end = open_ended(info)
    # one parser for every CPU: all their files at once
    cpus = trace_cpus(trace_dir)
    tmp_parent = scratch_parent([raw_bytes(trace_dir, c) for c in cpus], len(cpus))
    with journal.scratch("jitterscope-parse-", tmp_parent) as tmp:  # journalled: kill -9 leaves nothing
        out = Path(tmp)
        counts = run_parser(trace_dir, out, tsc_hz=hz, window=window, open_end=open_end)
        acts = _load(out / "activity.bin", ACTIVITY_DTYPE)
        segs = np.array(_load(out / "segments.bin", SEGMENT_DTYPE))
        strings = (out / "strings.bin").read_bytes().split(b"\0")[:-1]
        dictionary = pa.array([s.decode("utf-8", "replace") for s in strings], pa.string())
        kinds = pa.array(KINDS, pa.string())

        def decode(idx: np.ndarray, dic: pa.Array) -> pa.Array:
            # the parser's string indices → plain strings (the documented schema)
            return pa.DictionaryArray.from_arrays(pa.array(idx), dic).dictionary_decode()

        activity = pa.table(
            {
                "cpu": pa.array(acts["cpu"]),
                "start_tsc": pa.array(acts["start_tsc"]),
                "end_tsc": pa.array(acts["end_tsc"]),
                "kind": decode(acts["kind"].view(np.int8), kinds),
                "name": decode(acts["name"].view(np.int32), dictionary),
                "depth": pa.array(acts["depth"]),
                "detail": decode(acts["detail"].view(np.int32), dictionary),
                "pid": pa.array(acts["pid"]),
                "clipped": pa.array((acts["flags"] & (CLIPPED_START | CLIPPED_END)) != 0),
                "entered": pa.array((acts["flags"] & CLIPPED_START) == 0),
                "preempted": pa.array((acts["flags"] & PREEMPTED) != 0),
            },
            schema=ACTIVITY_SCHEMA,
        )
        del acts
    lost = lost_per_cpu(counts, trace_stats(trace_dir))
    events = {int(c): int(v["events"]) for c, v in counts.get("cpus", {}).items()}
    return TraceData(
        activity=activity,
        segments=segs,
        lost_events=int(sum(lost.values())),
        lost_by_cpu=lost,
        n_events=int(sum(events.values())),
        events_by_cpu=events,
        markers=list(counts.get("markers", [])),
        window=window,
        tsc_hz=float(hz) if hz else None,
        counts=counts,
    )
