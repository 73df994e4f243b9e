"""When compare calls a source changed: its tests' false discovery rate and the smallest change that counts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Thresholds:
    alpha: float = 0.01
    min_ppm: float = 20.0
    min_ratio: float = 1.5
