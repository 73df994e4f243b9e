"""The report API in Python: the twin of native/js_report.h.

A program run under `jitterscope protect` finds the path of its report page in
the environment variable JITTERSCOPE_REPORT.  A best-effort program publishes
the bytes it moves (the `report` signal, and its measured progress); a
latency-critical program publishes one heartbeat per iteration (its latency
distribution in the run, and the `slack` signal):

    from jitterscope.protect.report import ReportPage

    page = ReportPage.attach()            # None when not run under protect
    while True:
        t0 = time.monotonic_ns()
        frame = process(next_frame())
        if page:
            page.beat(time.monotonic_ns() - t0)    # critical: one heartbeat per iteration
            page.add(read_bytes=len(frame))        # best-effort: bytes moved

Times are CLOCK_MONOTONIC nanoseconds (`time.monotonic_ns()`).  One writer per
page; jitterscope only reads it.  The page layout is `records.REPORT_DTYPE`.
"""

from __future__ import annotations

import mmap
import os
import time
from pathlib import Path

import numpy as np

from jitterscope.errors import JitterscopeError
from jitterscope.protect.records import (
    REPORT_BEATS,
    REPORT_DTYPE,
    REPORT_ENV,
    REPORT_MAGIC,
    REPORT_VERSION,
)


class ReportPage:
    """One report page mapped into memory (see the module docstring)."""

    def __init__(self, path: Path, writable: bool) -> None:
        self.path = Path(path)
        try:
            fd = os.open(self.path, os.O_RDWR if writable else os.O_RDONLY)
        except OSError as err:
            raise JitterscopeError(f"{self.path}: cannot open report page: {err.strerror}") from None
        try:
            if os.fstat(fd).st_size < REPORT_DTYPE.itemsize:
                raise JitterscopeError(f"{self.path}: not a jitterscope report page (too short)")
            self._map = mmap.mmap(
                fd, REPORT_DTYPE.itemsize, mmap.MAP_SHARED, mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
            )
        finally:
            os.close(fd)
        self._p = np.ndarray((), dtype=REPORT_DTYPE, buffer=self._map)
        if (
            bytes(self._p["magic"]).ljust(8, b"\0") != REPORT_MAGIC
            or int(self._p["version"]) != REPORT_VERSION
            or int(self._p["size"]) != REPORT_DTYPE.itemsize
        ):
            raise JitterscopeError(f"{self.path}: not a jitterscope report page")
        if writable:
            self._p["pid"] = os.getpid()

    @classmethod
    def create(cls, path: Path) -> ReportPage:
        """A fresh, zeroed page at `path` (jitterscope makes one per program it runs)."""
        page = np.zeros((), dtype=REPORT_DTYPE)
        page["magic"], page["version"], page["size"] = REPORT_MAGIC, REPORT_VERSION, REPORT_DTYPE.itemsize
        Path(path).write_bytes(page.tobytes())
        return cls(Path(path), writable=False)

    @classmethod
    def attach(cls) -> ReportPage | None:
        """The page jitterscope prepared for this process (None when JITTERSCOPE_REPORT is unset)."""
        path = os.environ.get(REPORT_ENV)
        return cls(Path(path), writable=True) if path else None

    # -- publishing (the program) -----------------------------------------------------
    def add(self, read_bytes: int = 0, write_bytes: int = 0) -> None:
        """Bytes read and written since the last call: one unit of work, stamped now."""
        p = self._p
        p["read_bytes"] += read_bytes
        p["write_bytes"] += write_bytes
        p["ops"] += 1
        p["last_ns"] = time.monotonic_ns()

    def beat(self, latency_ns: int) -> None:
        """One iteration done, with its latency in ns."""
        i = int(self._p["beats"])
        slot = self._p["beat"][i % REPORT_BEATS]
        slot["end_ns"] = time.monotonic_ns()
        slot["latency_ns"] = int(latency_ns)
        self._p["beats"] = i + 1  # published after the entry (x86 stores are not reordered)

    def set_deadline(self, deadline_ns: int) -> None:
        """The per-iteration deadline: the reference of the `slack` signal."""
        self._p["deadline_ns"] = int(deadline_ns)

    # -- reading (jitterscope) ----------------------------------------------------------
    def counters(self) -> dict[str, int]:
        p = self._p
        return {k: int(p[k]) for k in ("pid", "read_bytes", "write_bytes", "ops", "last_ns", "beats", "deadline_ns")}

    def close(self) -> None:
        del self._p
        self._map.close()
