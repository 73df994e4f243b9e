"""The simulated job (bulk-synchronous: N nodes x P phases) and its results.

Shared by both engines: `iid` (per-phase delays drawn from a distribution, maxima
by order statistics) and `trace` (each node replays a measured noise timeline).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from jitterscope.simulate.results import Point, SimulationData

SYNCS = ("barrier", "allreduce", "none")


@dataclass(frozen=True)
class Job:
    """What to simulate.  Times in seconds.

    Every node does `phase_s` of work per phase; a phase ends when its last node
    finishes, then the nodes synchronize: ceil(log2 N) rounds of `link_latency_s`
    (dissemination barrier or recursive-doubling allreduce), which noise can hit
    too.  `sync="none"` keeps the phase structure but charges nothing for it."""

    nodes: tuple[int, ...]
    phases: tuple[int, ...]
    phase_s: float
    sync: str = "barrier"
    link_latency_s: float = 2e-6
    cosched: bool = False
    replications: int = 100
    seed: int = 0

    def rounds(self, n: int) -> int:
        """Synchronization rounds for n nodes: ceil(log2 n), 0 without synchronization."""
        if self.sync == "none" or n <= 1:
            return 0
        return int(math.ceil(math.log2(n) - 1e-12))

    def ideal_s(self, n: int, p: int) -> float:
        """The same job without noise."""
        return p * (self.phase_s + self.rounds(n) * self.link_latency_s)


@dataclass
class Result:
    """One (nodes, phases) point: the replications' mean runtime and its 95% CI."""

    nodes: int
    phases: int
    phase_s: float
    runtimes_s: np.ndarray = field(repr=False)  # one per replication
    ideal_s: float
    expected_s: float | None = None  # exact expectation when known

    @property
    def runtime_s(self) -> float:
        return float(np.mean(self.runtimes_s))

    @property
    def slowdown(self) -> float:
        return self.runtime_s / self.ideal_s - 1.0

    @property
    def ci95_s(self) -> tuple[float, float] | None:
        return mean_ci95(self.runtimes_s)

    def to_json(self) -> Point:
        ci = self.ci95_s
        out: Point = {
            "nodes": self.nodes,
            "phases": self.phases,
            "phase_s": self.phase_s,
            "runtime_s": self.runtime_s,
            "ideal_s": self.ideal_s,
            "slowdown": self.slowdown,
            "ci95_s": [ci[0], ci[1]] if ci else None,
        }
        if self.expected_s is not None:  # the model's exact expectation (runtime_s is the Monte Carlo mean)
            out["expected_s"] = self.expected_s
            out["expected_slowdown"] = self.expected_s / self.ideal_s - 1 if self.ideal_s > 0 else None
        return out


def mean_ci95(x: np.ndarray) -> tuple[float, float] | None:
    """Student-t 95% confidence interval of the mean of i.i.d. replications
    (None with fewer than two)."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return None
    m = float(x.mean())
    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return (m - half, m + half)


@dataclass
class Simulation:
    """All points of one simulation plus what was simulated."""

    model: dict[str, Any]
    results: list[Result]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> SimulationData:
        return {"model": self.model, "results": [r.to_json() for r in self.results]}

    def point(self, nodes: int, phases: int) -> Result:
        for r in self.results:
            if r.nodes == nodes and r.phases == phases:
                return r
        raise KeyError((nodes, phases))
