"""Hand-built ring-buffer pages: the parser's test input and the benchmark's load.

Writes a trace directory exactly as a session would (events.txt, formats.json,
cpuN.raw of page-sized buffers), from a list of timestamped events, using the
kernel's encoding: 5-bit type_len / 27-bit time_delta headers, TIME_EXTEND for
deltas that do not fit, type_len 0 with a length word for large events,
PADDING for discarded events, and the RB_MISSED_EVENTS / RB_MISSED_STORED
commit flags with the missed count after the data.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitterscope.tracing import formats

PAGE_SIZE = 4096
HEADER = {"timestamp": [0, 8], "commit": [8, 8], "data": [16, PAGE_SIZE - 16]}
RB_MISSED_EVENTS = 1 << 31
RB_MISSED_STORED = 1 << 30
TS_BITS = 27

_COMMON = {
    "common_type": [0, 2, 0],
    "common_flags": [2, 1, 0],
    "common_preempt_count": [3, 1, 0],
    "common_pid": [4, 4, 1],
}

# Synthetic event ids and layouts, the same as Linux 6.x's on x86-64.
EVENTS: dict[str, dict[str, Any]] = {
    "irq/irq_handler_entry": {"id": 101, "fields": {"irq": [8, 4, 1], "name": [12, 4, 0]}},
    "irq/irq_handler_exit": {"id": 102, "fields": {"irq": [8, 4, 1], "ret": [12, 4, 1]}},
    "irq/softirq_entry": {"id": 103, "fields": {"vec": [8, 4, 0]}},
    "irq/softirq_exit": {"id": 104, "fields": {"vec": [8, 4, 0]}},
    "irq_vectors/local_timer_entry": {"id": 105, "fields": {"vector": [8, 4, 1]}},
    "irq_vectors/local_timer_exit": {"id": 106, "fields": {"vector": [8, 4, 1]}},
    "nmi/nmi_handler": {"id": 107, "fields": {"handler": [8, 8, 0], "delta_ns": [16, 8, 1], "handled": [24, 4, 1]}},
    "sched/sched_switch": {
        "id": 108,
        "fields": {
            "prev_comm": [8, 16, 0],
            "prev_pid": [24, 4, 1],
            "prev_prio": [28, 4, 1],
            "prev_state": [32, 8, 1],
            "next_comm": [40, 16, 0],
            "next_pid": [56, 4, 1],
            "next_prio": [60, 4, 1],
        },
    },
    "workqueue/workqueue_execute_start": {"id": 109, "fields": {"work": [8, 8, 0], "function": [16, 8, 0]}},
    "workqueue/workqueue_execute_end": {"id": 110, "fields": {"work": [8, 8, 0], "function": [16, 8, 0]}},
    "timer/hrtimer_expire_entry": {
        "id": 111,
        "fields": {"hrtimer": [8, 8, 0], "now": [16, 8, 1], "function": [24, 8, 0]},
    },
    "timer/hrtimer_expire_exit": {"id": 112, "fields": {"hrtimer": [8, 8, 0]}},
    "ftrace/print": {"id": 5, "fields": {"ip": [8, 8, 0], "buf": [16, 0, 0]}},
}


def info() -> dict[str, Any]:
    """formats.collect()-shaped description of the synthetic events."""
    evs = {k: {"id": v["id"], "name": k.split("/")[1], "fields": {**_COMMON, **v["fields"]}} for k, v in EVENTS.items()}
    return {"header_page": HEADER, "header_event": "", "events": evs, "softirqs": formats.DEFAULT_SOFTIRQS}


def _common(name: str, pid: int) -> bytes:
    return struct.pack("<HBBi", EVENTS[name]["id"], 0, 0, pid)


# --- payload builders (pid = common_pid, the task current on the CPU) -------
def switch(prev_comm: str, prev_pid: int, next_comm: str, next_pid: int) -> bytes:
    return (
        _common("sched/sched_switch", prev_pid)
        + prev_comm.encode()[:15].ljust(16, b"\0")
        + struct.pack("<iiq", prev_pid, 120, 1)
        + next_comm.encode()[:15].ljust(16, b"\0")
        + struct.pack("<ii", next_pid, 120)
    )


def irq_entry(irq: int, name: str, pid: int = 0) -> bytes:
    s = name.encode() + b"\0"
    return _common("irq/irq_handler_entry", pid) + struct.pack("<iI", irq, (len(s) << 16) | 16) + s


def irq_exit(irq: int, pid: int = 0) -> bytes:
    return _common("irq/irq_handler_exit", pid) + struct.pack("<ii", irq, 1)


def softirq_entry(vec: int, pid: int = 0) -> bytes:
    return _common("irq/softirq_entry", pid) + struct.pack("<I", vec)


def softirq_exit(vec: int, pid: int = 0) -> bytes:
    return _common("irq/softirq_exit", pid) + struct.pack("<I", vec)


def local_timer_entry(pid: int = 0) -> bytes:
    return _common("irq_vectors/local_timer_entry", pid) + struct.pack("<i", 236)


def local_timer_exit(pid: int = 0) -> bytes:
    return _common("irq_vectors/local_timer_exit", pid) + struct.pack("<i", 236)


def nmi(handler: int, delta_ns: int, pid: int = 0) -> bytes:
    return _common("nmi/nmi_handler", pid) + struct.pack("<Qqi", handler, delta_ns, 1)


def work_start(work: int, function: int, pid: int) -> bytes:
    return _common("workqueue/workqueue_execute_start", pid) + struct.pack("<QQ", work, function)


def work_end(work: int, function: int, pid: int) -> bytes:
    return _common("workqueue/workqueue_execute_end", pid) + struct.pack("<QQ", work, function)


def hrtimer_entry(timer: int, function: int, pid: int = 0) -> bytes:
    return _common("timer/hrtimer_expire_entry", pid) + struct.pack("<QqQ", timer, 0, function)


def hrtimer_exit(timer: int, pid: int = 0) -> bytes:
    return _common("timer/hrtimer_expire_exit", pid) + struct.pack("<Q", timer)


def marker(text: str, pid: int = 0) -> bytes:
    return _common("ftrace/print", pid) + struct.pack("<Q", 0) + text.encode() + b"\0"


# --- ring-buffer encoding ---------------------------------------------------
def _encode(delta: int, payload: bytes) -> bytes:
    """One event with its header (and a TIME_EXTEND before it if delta needs it)."""
    out = b""
    if delta >= 1 << TS_BITS:
        out += struct.pack("<II", 30 | ((delta & ((1 << TS_BITS) - 1)) << 5), delta >> TS_BITS)
        delta = 0
    data = payload + b"\0" * (-len(payload) % 4)
    if len(data) <= 112:
        return out + struct.pack("<I", (len(data) // 4) | (delta << 5)) + data
    return out + struct.pack("<II", delta << 5, len(data) + 4) + data


def _padding(length: int) -> bytes:
    """A discarded event of `length` data bytes (type PADDING, non-zero delta)."""
    return struct.pack("<II", 29 | (1 << 5), length + 4) + b"\xee" * length


@dataclass
class Page:
    """Events for one page; `missed` marks lost events before it (None: no loss,
    -1: flag without a stored count, n: count stored after the data)."""

    events: list[tuple[int, bytes]]
    missed: int | None = None
    pad_after: int | None = None  # insert a discarded event after this many events


def encode_page(page: Page, page_size: int = PAGE_SIZE) -> bytes:
    ts0 = page.events[0][0] if page.events else 0
    data = b""
    prev = ts0
    for i, (ts, payload) in enumerate(page.events):
        if page.pad_after is not None and i == page.pad_after:
            data += _padding(24)
        data += _encode(ts - prev, payload)
        prev = ts
    commit = len(data)
    tail = b""
    if page.missed is not None:
        commit |= RB_MISSED_EVENTS
        if page.missed >= 0:
            commit |= RB_MISSED_STORED
            tail = struct.pack("<Q", page.missed)
    body = struct.pack("<QQ", ts0, commit) + data + tail
    if len(body) > page_size:
        raise ValueError(f"page overflows: {len(body)} bytes")
    return body + b"\0" * (page_size - len(body))


def paginate(events: list[tuple[int, bytes]], page_size: int = PAGE_SIZE) -> list[Page]:
    """Split a timestamp-ordered event list into pages the way the kernel fills them."""
    pages: list[Page] = []
    cur: list[tuple[int, bytes]] = []
    used = 0
    limit = page_size - 16 - 8  # leave room for a stored missed count
    prev = None
    for ts, payload in events:
        size = len(_encode(0 if prev is None else ts - prev, payload))
        if cur and used + size > limit:
            pages.append(Page(cur))
            cur, used = [], 0
            size = len(_encode(0, payload))
        cur.append((ts, payload))
        used += size
        prev = ts
    if cur:
        pages.append(Page(cur))
    return pages


def write_trace(
    trace_dir: Path,
    per_cpu: dict[int, list[Page]],
    window: tuple[int, int] | None = None,
    tsc_hz: float = 1e9,
    stats: dict[int, dict[str, int]] | None = None,
    symbols: dict[int, str] | None = None,
) -> Path:
    """A trace directory as TraceSession writes it."""
    trace_dir.mkdir(parents=True, exist_ok=True)
    formats.save(trace_dir, info())
    for cpu, pages in per_cpu.items():
        (trace_dir / f"cpu{cpu}.raw").write_bytes(b"".join(encode_page(p) for p in pages))
    session: dict[str, Any] = {"cpus": sorted(per_cpu), "tsc_hz": tsc_hz, "page_size": PAGE_SIZE}
    if window:
        session["window"] = list(window)
    (trace_dir / "session.json").write_text(json.dumps(session))
    if stats is not None:
        (trace_dir / "stats.json").write_text(json.dumps({str(c): s for c, s in stats.items()}))
    if symbols:
        (trace_dir / "symbols.txt").write_text("".join(f"{a:x} {n}\n" for a, n in sorted(symbols.items())))
    return trace_dir


def parser_missing() -> str | None:
    """Why the compiled jitterscope-traceparse cannot be used, or None when it can."""
    try:
        from jitterscope.native_bin import native_bin

        native_bin("jitterscope-traceparse")
    except Exception as err:  # noqa: BLE001 - any reason is the skip reason
        return str(err)
    return None


def needs_parser() -> Any:
    """pytest mark: skip, naming why, when jitterscope-traceparse is not built."""
    import pytest

    missing = parser_missing()
    return pytest.mark.skipif(missing is not None, reason=f"jitterscope-traceparse not built: {missing}")


# Spawned from a small Python, not from pytest: a process started by vfork (posix_spawn) inherits its
# parent's peak RSS until it execs, and pytest's would hide the parser's.
_SPAWN = """
import os, sys
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], dict(os.environ))
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def parser_peak_kib(trace: Path, out: Path, *flags: str) -> int:
    """Run jitterscope-traceparse on `trace` into `out` (made here); its own peak RSS (KiB), read from its
    rusage when reaped."""
    out.mkdir()
    from jitterscope.native_bin import native_bin

    exe = str(native_bin("jitterscope-traceparse"))
    proc = subprocess.run(
        [sys.executable, "-c", _SPAWN, exe, *flags, str(trace), str(out)], capture_output=True, text=True, check=True
    )
    code, peak = proc.stdout.split()
    assert code == "0", proc.stderr
    return int(peak)
