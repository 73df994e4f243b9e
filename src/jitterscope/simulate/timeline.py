"""A CPU's noise timeline, repeated end to end, and the work-conserving map between
wall time and work done.

Detours j = 0..M-1 at [s_j, s_j + d_j) within one period Tr (the run's duration);
the timeline repeats with that period so a node can start at any offset and a job
longer than the run wraps around.  With B_j = d_0 + ... + d_(j-1):

    A(t)    work done in [0, t): t - (noise in [0, t)), piecewise linear, flat inside detours
    A^-1(a) the earliest t with A(t) = a: a + B_j, j = number of detours with s_j - B_j < a

A phase of W work started at t ends at A^-1(A(t) + W).  This is work-conserving:
noise that lands in the time a phase was extended by also delays it (unlike
LogGOPSim's per-operation noise injection, Hoefler, Schneider & Lumsdaine, SC'10).
Both directions are one `searchsorted` on a sorted array, vectorized over nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class _SortedIndex:
    """searchsorted for many queries into one sorted array, via a uniform bucket grid.

    Each query finds its bucket by one multiplication and a table lookup, then
    steps over the few values inside that bucket (vectorized, at most K steps
    where K is the fullest bucket).  Several times faster than a binary search
    whose probes miss the cache; falls back to np.searchsorted when values
    cluster so that K would be large."""

    MAX_STEPS = 8

    def __init__(self, values: np.ndarray, span: float) -> None:
        self.v = values
        m = len(values)
        self.g = int(min(max(4 * m, 1), 1 << 22))
        self.h = span / self.g if span > 0 else 1.0
        self.edges = np.arange(self.g + 1) * self.h
        self.le = np.searchsorted(values, self.edges, side="right")
        self.lt = np.searchsorted(values, self.edges, side="left")
        per_bucket = np.diff(self.lt) if m else np.zeros(1, dtype=np.int64)
        self.k = int(per_bucket.max()) + 1 if m else 0
        self.fast = m > 0 and self.k <= self.MAX_STEPS

    def _bucket(self, x: np.ndarray) -> np.ndarray:
        b = np.clip((x / self.h).astype(np.int64), 0, self.g - 1)
        b -= (self.edges[b] > x) & (b > 0)  # rounding put x one bucket too far
        b += (self.edges[b + 1] <= x) & (b < self.g - 1)  # ... or one too near
        return b

    def count_le(self, x: np.ndarray) -> np.ndarray:
        """np.searchsorted(values, x, side="right")."""
        if not self.fast:
            return np.searchsorted(self.v, x, side="right")
        j = self.le[self._bucket(x)]
        last = len(self.v) - 1
        for _ in range(self.k):
            j += (j <= last) & (self.v[np.minimum(j, last)] <= x)
        return j

    def count_lt(self, x: np.ndarray) -> np.ndarray:
        """np.searchsorted(values, x, side="left")."""
        if not self.fast:
            return np.searchsorted(self.v, x, side="left")
        j = self.lt[self._bucket(x)]
        last = len(self.v) - 1
        for _ in range(self.k):
            j += (j <= last) & (self.v[np.minimum(j, last)] < x)
        return j


@dataclass
class Timeline:
    """Noise of one CPU: detour starts/durations (ns) in one period of `period_ns`."""

    period_ns: float
    starts: np.ndarray
    durations: np.ndarray
    label: str = ""
    _B: np.ndarray = field(init=False, repr=False)
    _a: np.ndarray = field(init=False, repr=False)
    _start_index: _SortedIndex = field(init=False, repr=False)
    _work_index: _SortedIndex = field(init=False, repr=False)

    def __post_init__(self) -> None:
        s = np.asarray(self.starts, dtype=np.float64)
        d = np.asarray(self.durations, dtype=np.float64)
        order = np.argsort(s, kind="stable")
        s, d = s[order], d[order]
        keep = (d > 0) & (s < self.period_ns) & (s >= 0)
        s, d = s[keep], d[keep]
        e = np.minimum(s + d, self.period_ns)  # a detour cannot outlast the run
        if len(s) > 1:  # merge overlaps (one CPU is busy once)
            run_end = np.maximum.accumulate(e)
            new = np.empty(len(s), dtype=bool)
            new[0] = True
            new[1:] = s[1:] > run_end[:-1]
            first = np.flatnonzero(new)
            s, e = s[first], np.maximum.reduceat(e, first)
        self.starts = s
        self.durations = e - s
        self._B = np.concatenate([[0.0], np.cumsum(self.durations)])
        self._a = self.starts - self._B[:-1]  # work done before detour j (within a period)
        self.work_per_period = float(self.period_ns - self._B[-1])
        if self.work_per_period <= 0:
            raise ValueError("timeline is all noise")
        self._start_index = _SortedIndex(self.starts, self.period_ns)
        self._work_index = _SortedIndex(self._a, self.work_per_period)

    @property
    def noise_fraction(self) -> float:
        return float(self._B[-1] / self.period_ns)

    def work_at(self, t: np.ndarray) -> np.ndarray:
        """A(t): work done by time t (t >= 0, any number of periods)."""
        t = np.asarray(t, dtype=np.float64)
        k = np.floor(t / self.period_ns)
        r = np.maximum(t - k * self.period_ns, 0.0)  # rounding may leave -1e-7 ns
        if len(self.starts) == 0:
            return t
        j = self._start_index.count_le(r) - 1  # last detour starting <= r
        jc = np.maximum(j, 0)
        inside = (j >= 0) & (r < self.starts[jc] + self.durations[jc])
        a_r = np.where(inside, self._a[jc], r - self._B[j + 1])
        return k * self.work_per_period + a_r

    def time_of(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A^-1(a) for a > 0, and the start of the first detour after that time."""
        a = np.asarray(a, dtype=np.float64)
        wp = self.work_per_period
        if len(self.starts) == 0:
            return a, np.full(a.shape, np.inf)
        # k periods complete, remainder in (0, wp]: work ending exactly at a period
        # boundary finishes before any detour that closes the period.
        k = np.ceil(a / wp) - 1
        ar = a - k * wp
        j = self._work_index.count_lt(ar)  # detours with a_j < ar
        t = k * self.period_ns + ar + self._B[j]
        m = len(self.starts)
        jn = np.minimum(j, m - 1)
        nxt = np.where(j < m, k * self.period_ns + self.starts[jn], (k + 1) * self.period_ns + self.starts[0])
        return t, nxt

    def finish(self, t0: np.ndarray, work: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(end time, next detour start) of `work` ns of work started at local time t0."""
        return self.time_of(self.work_at(t0) + work)


def periodic_timeline(period_ns: float, duration_ns: float) -> Timeline:
    """A detour of duration_ns at the start of every period_ns."""
    return Timeline(float(period_ns), np.array([0.0]), np.array([float(duration_ns)]), "periodic")
