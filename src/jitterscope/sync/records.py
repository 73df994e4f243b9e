"""The sync interposer's binary output, mirrored from native/interpose_records.h.

A process writes `sync-<pid>-<start_tsc>.raw`: one 128-byte header, then
64-byte records.  The dtypes here must match the C structs exactly;
tests/integration/test_sync_layout.py compares them with what
`jitterscope_sync_layout()` in libjssync.so reports from the compiler.
"""

from __future__ import annotations

import ctypes
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jitterscope import boundedio
from jitterscope.errors import JitterscopeError

MAGIC = b"JSSYNC\0\0"
VERSION = 1
FLAG_COMPLETE = 1
LIBRARY = "libjssync.so"

HEADER_DTYPE = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("header_size", "<u4"),
        ("record_size", "<u4"),
        ("flags", "<u4"),
        ("start_tsc", "<u8"),
        ("start_mono_ns", "<i8"),
        ("pid", "<u4"),
        ("ppid", "<u4"),
        ("n_records", "<u8"),
        ("dropped", "<u8"),
        ("threads", "<u8"),
        ("end_tsc", "<u8"),
        ("comm", "S16"),
        ("reserved", "<u8", (4,)),
    ]
)
RECORD_DTYPE = np.dtype(
    [
        ("enter_tsc", "<u8"),
        ("exit_tsc", "<u8"),
        ("obj", "<u8"),
        ("aux", "<u8"),
        ("site", "<u8"),
        ("tid", "<u4"),
        ("type", "<u2"),
        ("flags", "<u2"),
        ("result", "<i4"),
        ("cpu", "<u4"),
        ("reserved", "<u8"),
    ]
)
STRUCTS = {"js_sync_header": HEADER_DTYPE, "js_sync_record": RECORD_DTYPE}

# enum js_sync_type
LOCK, UNLOCK, COND_WAIT, COND_SIGNAL, COND_BROADCAST, BARRIER_WAIT, BARRIER_INIT = 1, 2, 3, 4, 5, 6, 7
CREATE, START, EXIT, JOIN, RDLOCK, WRLOCK, RWUNLOCK, FRAME = 8, 9, 10, 11, 12, 13, 14, 15
SEM_WAIT, SEM_POST, SPIN_LOCK = 16, 17, 18
TYPE_NAMES = {
    LOCK: "lock",
    UNLOCK: "unlock",
    COND_WAIT: "cond_wait",
    COND_SIGNAL: "cond_signal",
    COND_BROADCAST: "cond_broadcast",
    BARRIER_WAIT: "barrier_wait",
    BARRIER_INIT: "barrier_init",
    CREATE: "create",
    START: "start",
    EXIT: "exit",
    JOIN: "join",
    RDLOCK: "rdlock",
    WRLOCK: "wrlock",
    RWUNLOCK: "rwunlock",
    FRAME: "frame",
    SEM_WAIT: "sem_wait",
    SEM_POST: "sem_post",
    SPIN_LOCK: "spin_lock",
}
# js_sync_record.flags
SF_SLEPT, SF_TIMED, SF_SERIAL = 1, 2, 4


def layout(dtype: np.dtype) -> dict[str, dict[str, int]]:
    """{field: {offset, size}} in the shape jitterscope_sync_layout() prints."""
    assert dtype.fields is not None
    return {name: {"offset": int(off), "size": int(dt.itemsize)} for name, (dt, off, *_) in dtype.fields.items()}


def c_layout(lib: Path) -> dict:
    """The layout the compiler gave the structs, from the built library."""
    so = ctypes.CDLL(str(lib))
    buf = ctypes.create_string_buffer(8192)
    n = so.jitterscope_sync_layout(buf, ctypes.c_size_t(len(buf)))
    if n < 0:
        raise JitterscopeError("jitterscope_sync_layout: buffer too small")
    return json.loads(buf.value.decode())


@dataclass
class ProcessLog:
    """One process's records (as written), its header and the file they came from."""

    path: Path
    header: np.void
    records: np.ndarray
    complete: bool
    partial_bytes: int  # a trailing piece of a record (crash mid-write), ignored

    @property
    def pid(self) -> int:
        return int(self.header["pid"])

    @property
    def comm(self) -> str:
        return bytes(self.header["comm"]).split(b"\0")[0].decode(errors="replace")


def read_log(path: Path) -> ProcessLog:
    """Read one process's file; a file cut short (crash, kill -9) keeps its whole records."""
    data = boundedio.read_bytes(path, "sync log", boundedio.table_cap())
    if len(data) < HEADER_DTYPE.itemsize:
        raise JitterscopeError(f"{path}: truncated sync log ({len(data)} bytes, header needs {HEADER_DTYPE.itemsize})")
    hdr = np.frombuffer(data, HEADER_DTYPE, count=1)[0]
    if bytes(hdr["magic"]).rstrip(b"\0") != MAGIC.rstrip(b"\0"):
        raise JitterscopeError(f"{path}: not a jitterscope sync log (bad magic)")
    if int(hdr["version"]) != VERSION or int(hdr["record_size"]) != RECORD_DTYPE.itemsize:
        raise JitterscopeError(f"{path}: sync log version {int(hdr['version'])} is not {VERSION}")
    body = data[int(hdr["header_size"]) :]
    n = len(body) // RECORD_DTYPE.itemsize
    rec = np.frombuffer(body, RECORD_DTYPE, count=n).copy()
    return ProcessLog(
        Path(path), hdr, rec, bool(int(hdr["flags"]) & FLAG_COMPLETE), len(body) - n * RECORD_DTYPE.itemsize
    )


def read_logs(raw_dir: Path) -> list[ProcessLog]:
    """Every process's log in a run's raw directory, oldest first."""
    logs = [read_log(p) for p in sorted(Path(raw_dir).glob("sync-*.raw"))]
    return sorted(logs, key=lambda lg: int(lg.header["start_tsc"]))


# What the interposer cannot see (interpose.c's limits), stated in every summary so that a primitive or a path
# missing from the tables is never read as "no waiting".
UNSEEN = (
    "who released a spin lock (pthread_spin_unlock is one store with no waiter count: a contended "
    "pthread_spin_lock is a wait of its own length, with no releaser)",
    'calls through a pointer from dlsym()/dlopen() (e.g. dlsym(dlopen("libpthread.so.0"), ...)): they bypass '
    "the preloaded wrappers",
    "locks inside libc itself (stdio, malloc) and raw futex users (Go, some runtimes)",
    "statically linked programs (nothing to interpose)",
)
