"""The bsp work loop (native/bspwork.c) through ctypes, and its calibration."""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

import numpy as np

from jitterscope.errors import JitterscopeError
from jitterscope.native_bin import native_bin

LIB = "libjsbspwork.so"
_U64P = ctypes.POINTER(ctypes.c_uint64)


@functools.lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    path = native_bin(LIB)  # raises "run make native" when missing
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as err:
        raise JitterscopeError(f"cannot load {path} ({err}): run 'make native'") from None
    lib.js_bsp_spin.argtypes = [ctypes.c_uint64, ctypes.c_uint64, _U64P, _U64P, ctypes.c_uint64, _U64P]
    lib.js_bsp_spin.restype = ctypes.c_uint64
    lib.js_bsp_rdtsc.argtypes = []
    lib.js_bsp_rdtsc.restype = ctypes.c_uint64
    return lib


def rdtsc() -> int:
    return int(_lib().js_bsp_rdtsc())


class WorkLoop:
    """Gap buffers shared by every phase of one run (no allocation while spinning)."""

    def __init__(self, threshold_cycles: int, capacity: int = 1 << 20) -> None:
        self.lib = _lib()
        self.threshold = int(threshold_cycles)
        self.gap_start = np.zeros(capacity, dtype=np.uint64)
        self.gap_len = np.zeros(capacity, dtype=np.uint64)
        self.used = 0
        self.dropped = 0
        self._out = np.zeros(4, dtype=np.uint64)
        self._outp = self._out.ctypes.data_as(_U64P)

    def spin(self, iters: int) -> tuple[int, int, int, int]:
        """Run `iters` iterations; returns (first_tsc, last_tsc, gaps, gap_cycles)."""
        cap = len(self.gap_start) - self.used
        off = self.used * 8
        gs = ctypes.cast(self.gap_start.ctypes.data + off, _U64P)
        gl = ctypes.cast(self.gap_len.ctypes.data + off, _U64P)
        stored = int(self.lib.js_bsp_spin(int(iters), self.threshold, gs, gl, cap, self._outp))
        self.used += stored
        first, last, gaps, gap_cycles = (int(x) for x in self._out)
        self.dropped += gaps - stored
        return first, last, gaps, gap_cycles

    def gaps(self) -> tuple[np.ndarray, np.ndarray]:
        return self.gap_start[: self.used].copy(), self.gap_len[: self.used].copy()

    def reset(self) -> None:
        self.used = 0
        self.dropped = 0


@dataclass
class Calibration:
    iterations: int  # loop iterations per phase
    cycles_per_iter: float  # noise-free cost of one iteration
    trials: int


def calibrate(loop: WorkLoop, phase_cycles: float, trials: int = 15) -> Calibration:
    """Iterations whose noise-free duration is one phase.

    Each trial times a phase-length run and removes the time spent in gaps
    above the threshold.  The median over the trials is the estimate, so noise
    below the threshold (which no trace shows, so no simulator sees) is part of
    the work, as it will be in every phase; the run also reports the actual
    noise-free work per phase it got.
    """
    first, last, _, gap = loop.spin(20_000)  # warm-up and a first estimate
    cpi = max(1e-3, (last - first - gap) / 20_000)
    costs: list[float] = []
    for _ in range(trials):
        n = max(1000, int(phase_cycles / cpi))
        first, last, _, gap = loop.spin(n)
        costs.append(max(1e-3, (last - first - gap) / n))
        cpi = float(np.median(costs))
    loop.reset()
    return Calibration(iterations=max(1, round(phase_cycles / cpi)), cycles_per_iter=cpi, trials=trials)
