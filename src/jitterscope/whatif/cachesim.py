"""The cache simulator (native/cachesim.c, libjscachesim.so) through ctypes: geometry, configuration,
kernel sources and bursts in, counters out.  The structures mirror native/js_cachesim.h (a test
compares them with the compiler's layout through js_cachesim_layout)."""

from __future__ import annotations

import ctypes
import functools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.native_bin import native_bin
from jitterscope.units import parse_size

LIB = "libjscachesim.so"
LINE = 64
U32, U64 = ctypes.c_uint32, ctypes.c_uint64

STAT_FIELDS = ["accesses", "l2_accesses", "home_hits", "other_hits", "misses"]  # [app, os] pairs
STAT_SCALARS = [
    "writebacks",
    "overflows",
    "overflow_rejected",
    "app_evicted_by_os",
    "prefetched",
    "prefetch_useful",
    "prefetch_skipped",
    "flushes",
    "bursts",
]


class Config(ctypes.Structure):
    _fields_ = [
        (n, U32)
        for n in (
            "l1_sets",
            "l1_ways",
            "l1_line_shift",
            "l2_sets",
            "l2_ways",
            "os_sets",
            "os_ways",
            "overflow",
            "flush",
            "migrate_back",
            "prefetch_lines",
            "pin",
            "pin_pct",
            "prefetch_pct",
            "active_mult",
            "ema_shift",
        )
    ]


class Stats(ctypes.Structure):
    _fields_ = [(n, U64 * 2) for n in STAT_FIELDS] + [(n, U64) for n in STAT_SCALARS]


class Source(ctypes.Structure):
    _fields_ = [("base", U64), ("lines", U64), ("cursor", U64), ("write_every", U32), ("pad", U32)]


@dataclass(frozen=True)
class Geometry:
    size: int
    ways: int
    line: int = LINE

    @property
    def sets(self) -> int:
        return self.size // (self.ways * self.line)


def parse_geometry(text: str, option: str, line: int = LINE, allow_off: bool = False) -> Geometry | None:
    """`SIZE,Nway[,LINE]` (e.g. 256KiB,4way or 32KiB,2way,32B) -> Geometry; sets must be a power of two."""
    t = text.strip().lower()
    if allow_off and t in ("0", "off", "none"):
        return None
    parts = [p.strip() for p in t.split(",")]
    m = re.fullmatch(r"(\d+)\s*-?ways?", parts[1]) if len(parts) in (2, 3) else None
    if not m:
        raise UsageError(f"{option} {text!r}: expected SIZE,WAYSway[,LINE] (e.g. 256KiB,4way or 32KiB,2way,32B)")
    size, ways = parse_size(parts[0], option), int(m.group(1))
    if len(parts) == 3:
        line = parse_size(parts[2], option)
    if ways < 1:
        raise UsageError(f"{option} {text!r}: the way count must be at least 1")
    if line & (line - 1) or not 4 <= line <= LINE:
        raise UsageError(f"{option} {text!r}: the line size must be a power of two from 4 to {LINE} bytes")
    g = Geometry(size, ways, line)
    if size % (ways * line) or g.sets < 1 or g.sets & (g.sets - 1):
        raise UsageError(
            f"{option} {text!r}: size / (ways x {line} B lines) = {size / (ways * line):g} sets; "
            "it must be a power of two"
        )
    return g


@functools.lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    path = native_bin(LIB)
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as err:
        raise JitterscopeError(f"cannot load {path} ({err}): run 'make native'") from None
    p64, p32 = ctypes.POINTER(U64), ctypes.POINTER(U32)
    lib.js_cachesim_run.argtypes = [
        ctypes.POINTER(Config),
        p64,
        U64,
        p64,
        p32,
        p64,
        U64,
        ctypes.POINTER(Source),
        U32,
        ctypes.POINTER(Stats),
    ]
    lib.js_cachesim_run.restype = ctypes.c_int
    lib.js_cachesim_layout.argtypes = [p64, ctypes.c_int]
    return lib


def c_layout() -> list[int]:
    out = (U64 * 16)()
    n = _lib().js_cachesim_layout(out, 16)
    return list(out[:n])


def py_layout() -> list[int]:
    return [
        ctypes.sizeof(Config),
        Config.l2_sets.offset,
        Config.ema_shift.offset,
        ctypes.sizeof(Stats),
        Stats.writebacks.offset,
        Stats.bursts.offset,
        ctypes.sizeof(Source),
        Source.cursor.offset,
        Source.write_every.offset,
    ]


@dataclass
class Bursts:
    """Kernel bursts: before application access pos[i], source src[i] runs length[i] accesses."""

    pos: np.ndarray
    src: np.ndarray
    length: np.ndarray

    @staticmethod
    def none() -> Bursts:
        return Bursts(np.zeros(0, np.uint64), np.zeros(0, np.uint32), np.zeros(0, np.uint64))


def _ptr(a: np.ndarray, t: type) -> Any:
    return a.ctypes.data_as(ctypes.POINTER(t))


def run(cfg: Config, trace: np.ndarray, bursts: Bursts, sources: list[tuple[int, int, int]]) -> dict[str, int]:
    """One simulation; sources: (base address, footprint lines, store every Nth access).  Counters by name
    (`misses_app`, `misses_os`, `writebacks`, ...)."""
    trace = np.ascontiguousarray(trace, dtype=np.uint64)
    order = np.argsort(bursts.pos, kind="stable")
    pos = np.ascontiguousarray(bursts.pos[order], np.uint64)
    src = np.ascontiguousarray(bursts.src[order], np.uint32)
    length = np.ascontiguousarray(bursts.length[order], np.uint64)
    srcs = (Source * max(len(sources), 1))(*[Source(b, n, 0, w, 0) for b, n, w in sources])
    st = Stats()
    rc = _lib().js_cachesim_run(
        ctypes.byref(cfg),
        _ptr(trace, U64),
        len(trace),
        _ptr(pos, U64),
        _ptr(src, U32),
        _ptr(length, U64),
        len(pos),
        srcs,
        len(sources),
        ctypes.byref(st),
    )
    if rc:
        raise JitterscopeError("the cache simulator could not allocate its caches (out of memory)")
    out = {f"{n}_{who}": int(getattr(st, n)[i]) for n in STAT_FIELDS for i, who in enumerate(("app", "os"))}
    out.update({n: int(getattr(st, n)) for n in STAT_SCALARS})
    return out
