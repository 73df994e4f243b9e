"""The TSC clock: its frequency, and every conversion between ticks and nanoseconds.

The probe, the injector, the bsp work loop and the kernel trace (trace clock
`x86-tsc`) all stamp with the raw TSC, so one frequency converts them all onto
one time axis.  Every conversion goes through this module, so they round alike:
times relative to the run's t0 are rounded to whole nanoseconds, durations and
rates stay floating point.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TypedDict, overload

import numpy as np

from jitterscope import bootcache, sysinfo
from jitterscope.errors import JitterscopeError
from jitterscope.native_bin import PROBE_PROGRAM, native_bin
from jitterscope.native_child import last_line

NS_PER_S = 1e9


def tsc_hz() -> float:
    """TSC frequency in Hz, calibrated once per process.

    The probe measures TSC ticks against CLOCK_MONOTONIC_RAW over 150 ms, taking
    at each end the tightest of 64 (tsc, clock, tsc) brackets.  With the `tsc`
    clocksource MONOTONIC_RAW *is* the kernel's TSC-to-ns conversion (its
    refined tsc_khz), so this reproduces the kernel's own figure; repeated
    calibrations agree to well under 1 ppm (tests/integration/test_probe_lifecycle.py
    asserts < 100 ppm).  The kernel exports no tsc_khz file to read directly.  The figure is
    kept for the rest of the boot (BOOT_CACHE).
    """
    return Calibration().result()


_calibrated: float | None = None  # this process's figure, once measured

# The kernel fixes the TSC's rate at boot, so one calibration serves every process until the next boot:
# without it each measure, sync, pipeline or inject spent 150 ms (and more under load) measuring it again.
# /run is emptied at boot; the key also names the clocksource MONOTONIC_RAW follows.
BOOT_CACHE = bootcache.DIR / "tsc.json"


def _boot_key() -> str | None:
    boot = sysinfo.boot_id()
    return f"{boot} {sysinfo.clocksource()}" if boot else None


def _plausible(hz: object) -> bool:
    return isinstance(hz, float) and 1e8 < hz < 1e11


class _Record(TypedDict):
    boot: str
    tsc_hz: float  # believed only a float in range (_plausible): not a string that parses as one


def _cached_hz(key: str | None) -> float | None:
    """This boot's figure, if a process of root's or this user's recorded it."""
    doc = bootcache.read(BOOT_CACHE, _Record, key, "TSC calibration", cap=4096)
    hz = doc["tsc_hz"] if doc else None
    return hz if _plausible(hz) else None


def _remember(key: str | None, hz: float) -> None:
    if key is not None:
        bootcache.write(BOOT_CACHE, _Record(boot=key, tsc_hz=hz))


class Calibration:
    """tsc_hz() started now and read later: the probe spends its 150 ms while this process goes on
    (sync sets up the run meanwhile)."""

    def __init__(self) -> None:
        global _calibrated
        self._key = _boot_key()
        if _calibrated is None:
            _calibrated = _cached_hz(self._key)  # read once per process, as a calibration is made once
        self._hz = _calibrated
        self._proc: subprocess.Popen[str] | None = None
        if self._hz is None:
            _require_invariant_tsc()
            cmd = [str(native_bin(PROBE_PROGRAM)), "--calibrate", "150"]
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(self) -> float:
        global _calibrated
        if self._hz is not None:
            return self._hz
        assert self._proc is not None
        try:
            out, err = self._proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
            raise JitterscopeError("TSC calibration did not end in 30 s") from None
        if self._proc.returncode != 0:
            raise JitterscopeError(f"TSC calibration failed: {last_line(err, PROBE_PROGRAM)}")
        hz = float(json.loads(out)["tsc_hz"])
        if not _plausible(hz):
            raise JitterscopeError(f"TSC calibration gave an implausible {hz:.0f} Hz")
        self._hz = _calibrated = hz
        _remember(self._key, hz)
        return hz


def _require_invariant_tsc() -> None:
    """The probe's clock must tick at a constant rate and never stop."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return
    if "vendor_id" not in text:
        raise JitterscopeError("the probe needs an x86-64 CPU (it reads the TSC)")
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    missing = [f for f in ("tsc", "constant_tsc") if f not in flags]
    if missing:
        raise JitterscopeError(f"the CPU lacks {', '.join(missing)}: TSC timestamps would not be comparable")


@overload
def to_ns(ticks: float, hz: float) -> float: ...
@overload
def to_ns(ticks: np.ndarray, hz: float) -> np.ndarray: ...
def to_ns(ticks: float | np.ndarray, hz: float) -> float | np.ndarray:
    """A length in ticks as (fractional) nanoseconds."""
    if isinstance(ticks, np.ndarray):
        return ticks.astype(np.float64) * (NS_PER_S / hz)
    return float(ticks) * (NS_PER_S / hz)


def to_ticks(ns: float, hz: float) -> float:
    """A length in nanoseconds as (fractional) ticks."""
    return ns * hz / NS_PER_S


def ns_per_tick(hz: float) -> float:
    """The factor to_int_ns multiplies ticks by (the trace parser gets it as Python prints it)."""
    return NS_PER_S / hz


def to_int_ns(ticks: np.ndarray, hz: float) -> np.ndarray:
    """Lengths in ticks as whole nanoseconds (int64, rounded to nearest, half to even)."""
    ns = np.asarray(ticks).astype(np.float64)  # a copy, rounded in place (np.round is rint)
    ns *= ns_per_tick(hz)
    return np.rint(ns, out=ns).astype(np.int64)


def since_ns(tsc: np.ndarray, t0_tsc: int, hz: float) -> np.ndarray:
    """TSC stamps as whole nanoseconds since `t0_tsc` (int64; the difference is taken in ticks first).

    As to_int_ns of the int64 difference, with the difference cast to float as it is taken: one array
    made on the way instead of two (a streaming analysis converts two stamps of every kernel event)."""
    tsc = np.asarray(tsc)
    if tsc.dtype != np.int64:
        tsc = tsc.astype(np.int64)
    ns = np.empty(tsc.shape, np.float64)
    np.subtract(tsc, np.int64(t0_tsc), out=ns, dtype=np.int64, casting="unsafe")
    ns *= ns_per_tick(hz)
    return np.rint(ns, out=ns).astype(np.int64)


def detours_ns(raw: np.ndarray, t0_tsc: int, hz: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Probe records (TSC) to (cpu, start_ns, duration_ns) sorted by cpu, start."""
    cpu = raw["cpu"].astype(np.int32)
    rel = raw["start_tsc"].astype(np.int64) - np.int64(t0_tsc)
    start = to_int_ns(rel, hz)
    # Round the end, not the duration, so back-to-back detours never overlap by a rounding ns.
    end = to_int_ns(rel + raw["duration_tsc"].astype(np.int64), hz)
    dur = end - start
    order = np.lexsort((start, cpu))
    return cpu[order], start[order], dur[order]
