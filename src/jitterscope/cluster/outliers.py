"""Nodes whose noise profile differs from the rest: robust z-scores per source.

Method: the modified z-score of Iglewicz and Hoaglin (B. Iglewicz, D. C. Hoaglin,
"How to Detect and Handle Outliers", ASQC Basic References in Quality Control
vol. 16, 1993): for a value x among values with median m and median absolute
deviation MAD, M = 0.6745 (x - m) / MAD, i.e. (x - m) / (1.4826 MAD), where
1.4826 MAD estimates the standard deviation of normal data (Rousseeuw and
Croux, JASA 88(424), 1993).  Values with |M| > 3.5 are called outliers.

Two adjustments for noise profiles:
- Leave-one-out: each node is scored against the median and MAD of the *other*
  nodes, so one odd node among few cannot pull the reference towards itself
  (masking).  Above LOO_MAX nodes the whole sample is used: one value then
  moves the median and MAD by at most one order statistic.
- A scale floor: when the other nodes agree exactly (MAD = 0, typically a
  source no other node has), the scale is a floor instead — a small fraction of
  the typical node's total noise, at least FLOOR_PPM — so that only differences
  that matter for the noise budget are called out.
Only excess noise (M > 3.5) makes a node an outlier: a node quieter than the
rest is not a problem to point at.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

CUTOFF = 3.5  # Iglewicz and Hoaglin's recommended threshold for |M|
MAD_TO_SD = 1.4826  # 1 / Phi^-1(3/4): MAD -> standard deviation for normal data
FLOOR_PPM = 10.0  # 10 us per second: smaller differences are not worth a user's time
FLOOR_SHARE = 0.01  # ... or 1% of the typical node's total noise, whichever is larger
LOO_MAX = 500
MIN_NODES = 3


def reference(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per node and feature, the (median, MAD) of the other nodes' values.

    values: nodes x features.  Returns two arrays of the same shape."""
    n = values.shape[0]
    if n > LOO_MAX:
        med = np.median(values, axis=0)
        mad = np.median(np.abs(values - med), axis=0)
        return np.broadcast_to(med, values.shape).copy(), np.broadcast_to(mad, values.shape).copy()
    med = np.empty_like(values, dtype=float)
    mad = np.empty_like(values, dtype=float)
    for i in range(n):
        others = np.delete(values, i, axis=0)
        m = np.median(others, axis=0)
        med[i] = m
        mad[i] = np.median(np.abs(others - m), axis=0)
    return med, mad


def scale_floor(total_ppm: np.ndarray) -> float:
    """The smallest scale used: FLOOR_SHARE of the median node's total noise, >= FLOOR_PPM."""
    typical = float(np.median(total_ppm)) if total_ppm.size else 0.0
    return max(FLOOR_PPM, FLOOR_SHARE * typical)


def robust_z(values: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out modified z-scores (nodes x features) and the reference medians."""
    values = np.asarray(values, dtype=float)
    med, mad = reference(values)
    scale = np.maximum(MAD_TO_SD * mad, floor)
    return (values - med) / scale, med


class OutlierSource(TypedDict):
    source: str
    ppm: float
    typical_ppm: float  # the other nodes' median
    z: float


class Outlier(TypedDict):
    node: str
    score: float  # its largest z
    sources: list[OutlierSource]


def find_outliers(
    nodes: list[str], features: list[str], ppm: np.ndarray, total_ppm: np.ndarray, cutoff: float = CUTOFF
) -> list[Outlier]:
    """Outlier nodes, most different first, each with the features that make it differ.

    ppm: nodes x features (noise from each source on each node, in ppm of the
    node's measured time).  Returns [{node, score, sources: [{source, ppm,
    typical_ppm, z}]}] for nodes with at least one z > cutoff."""
    if len(nodes) < MIN_NODES or not features:
        return []
    z, med = robust_z(ppm, scale_floor(np.asarray(total_ppm, dtype=float)))
    out: list[Outlier] = []
    for i, node in enumerate(nodes):
        hits = [j for j in np.argsort(-z[i]) if z[i, j] > cutoff]
        if not hits:
            continue
        out.append(
            {
                "node": node,
                "score": round(float(z[i, hits[0]]), 2),
                "sources": [
                    {
                        "source": features[j],
                        "ppm": round(float(ppm[i, j]), 2),
                        "typical_ppm": round(float(med[i, j]), 2),
                        "z": round(float(z[i, j]), 2),
                    }
                    for j in hits
                ],
            }
        )
    out.sort(key=lambda o: -o["score"])
    return out
