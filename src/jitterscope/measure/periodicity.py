"""Is a source periodic, and with what period?

A source that recurs regularly (the scheduler tick, a daemon waking every
10 s) shows occurrences at t0 + k·P for integers k, with some k missing when an
occurrence fell below the detour threshold or outside the run.  We take the
median gap as a first guess (robust to missed occurrences, which only add
multiples of P), assign each occurrence its integer k, and refine P by ordinary
least squares of t on k — the standard estimator for a line through
timestamps (e.g. NTP's clock-frequency estimation, RFC 5905 §A.5.5 uses the
same idea).  The source is called periodic when most gaps are near-integer
multiples of P and the residual jitter is small compared with P.
"""

from __future__ import annotations

import numpy as np

MIN_OCCURRENCES = 5
TOLERANCE = 0.1  # a gap within ±10 % of k·P counts as regular
MIN_REGULAR_SHARE = 0.8  # share of gaps that must be regular


def detect_period(times_ns: np.ndarray) -> float | None:
    """Period in seconds of the occurrence times (ns), or None when irregular."""
    t = np.unique(np.asarray(times_ns, dtype=np.float64))
    if len(t) < MIN_OCCURRENCES:
        return None
    gaps = np.diff(t)
    guess = float(np.median(gaps))
    # Bursts (several detours per wake-up) make the median gap tiny; take the
    # median of the gaps that are not bursts in that case.
    big = gaps[gaps > 0.5 * np.percentile(gaps, 90)]
    if len(big) >= MIN_OCCURRENCES - 1 and np.median(big) > 3 * guess:
        guess = float(np.median(big))
    if guess <= 0:
        return None
    ratio = gaps / guess
    k_gap = np.round(ratio)
    regular = (k_gap >= 1) & (np.abs(ratio - k_gap) <= TOLERANCE * np.maximum(k_gap, 1))
    bursts = k_gap < 1
    if regular.sum() < MIN_REGULAR_SHARE * (len(gaps) - bursts.sum()) or regular.sum() < MIN_OCCURRENCES - 1:
        return None
    # Keep the first occurrence of each burst, then fit t = t0 + k·P.
    keep = np.concatenate([[True], ~bursts])
    tk = t[keep]
    k = np.concatenate([[0], np.cumsum(np.maximum(np.round(np.diff(tk) / guess), 1))])
    slope, intercept = np.polyfit(k, tk, 1)
    resid = tk - (intercept + slope * k)
    if slope <= 0 or np.median(np.abs(resid)) > TOLERANCE * slope:
        return None
    return float(slope) / 1e9
