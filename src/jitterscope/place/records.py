"""The place page (oracle weight, special operations, emulated faults), mirrored from native/js_place.h.

tests/integration/test_place.py compares this layout with what
`jitterscope-cachebuster --layout` reports from the compiler.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np

from jitterscope.errors import JitterscopeError

MAGIC = b"JSPLACE\0"
VERSION = 1
NO_WEIGHT = -1
PAGE_ENV, LITTLE_ENV, FAULTS_ENV = "JITTERSCOPE_PLACE_PAGE", "JITTERSCOPE_LITTLE_CPUS", "JITTERSCOPE_PLACE_FAULTS"

PAGE_DTYPE = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("size", "<u4"),
        ("pid", "<i4"),
        ("last_fault_cpu", "<i4"),
        ("weight_ppm", "<i8"),
        ("specials", "<u8"),
        ("faults", "<u8"),
        ("reserved", "<u8", (3,)),
    ]
)


class PlacePage:
    """One task's place page, created by jitterscope and read at every observation."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        page = np.zeros((), dtype=PAGE_DTYPE)
        page["magic"], page["version"], page["size"] = MAGIC, VERSION, PAGE_DTYPE.itemsize
        page["weight_ppm"], page["last_fault_cpu"] = NO_WEIGHT, -1
        try:
            self.path.write_bytes(page.tobytes())
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as err:
            raise JitterscopeError(f"{self.path}: cannot create the place page: {err.strerror}") from None
        try:
            self._map = mmap.mmap(fd, PAGE_DTYPE.itemsize, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        self._p = np.ndarray((), dtype=PAGE_DTYPE, buffer=self._map)

    def counters(self) -> dict[str, int]:
        return {k: int(self._p[k]) for k in ("pid", "last_fault_cpu", "weight_ppm", "specials", "faults")}

    def close(self) -> None:
        del self._p
        self._map.close()
