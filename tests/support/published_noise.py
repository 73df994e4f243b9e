"""The published at-scale noise results, recomputed by `simulate` (both models) and by LogGOPSim.

Ferreira, Bridges & Brightwell, "Characterizing application sensitivity to OS interference
using kernel-level noise injection", SC08: the same net noise, 2.5% of every CPU, costs a
bulk-synchronous job almost nothing as high-frequency short detours (25 us at 1 kHz) and a
large slowdown as low-frequency long ones (2.5 ms at 10 Hz), at 10,000 nodes.

Hoefler, Schneider & Lumsdaine, "Characterizing the influence of system noise on
large-scale applications by simulation", SC10: the scale at which noise becomes the
bottleneck of collectives depends on the structure of the noise, not only its amount.
Their per-system traces are not in this repository's reach (only the paper's abstract was
found in the stored material), so what is compared is that claim on the same two 2.5%
signatures, on a loop of barriers (100 barriers, 1 us of work between them): the smallest
P at which a barrier under noise takes twice its noise-free time (ceil(log2 P) rounds of
2o + L), i.e. at which noise, not the network, is most of a collective's time.

The SC08 job: P hosts, 100 phases of 1 ms compute + a dissemination barrier.  Both use
LogGP's defaults (rounds of 2o + L = 5.5 us; the default model gets `--link-latency 5.5us`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jitterscope.simulate import Job, simulate
from jitterscope.simulate.loggop import LogGP, periodic_trace, rounds, simulate_loggopsim, trace_text
from jitterscope.simulate.spec import PeriodicNoise, parse_noise

SIGNATURES = {
    "25 us every 1 ms": "periodic(period=1ms,duration=25us)",
    "2.5 ms every 100 ms": "periodic(period=100ms,duration=2.5ms)",
}
SC08 = "SC08"  # 100 phases of 1 ms + barrier
SC10 = "SC10"  # 100 barriers, 1 us apart
WORK_S = {SC08: 1e-3, SC10: 1e-6}
PHASES = 100
ROUND_S = LogGP().round_ns() / 1e9
SEEDS = (1, 2, 3)


@dataclass(frozen=True)
class Point:
    experiment: str  # SC08 or SC10
    tool: str  # "simulate", "simulate --model loggopsim", "LogGOPSim"
    signature: str
    hosts: int
    runtime_s: float

    @property
    def ideal_s(self) -> float:
        return PHASES * (WORK_S[self.experiment] + rounds(self.hosts) * ROUND_S)

    @property
    def slowdown(self) -> float:
        return self.runtime_s / self.ideal_s - 1

    @property
    def barrier_ratio(self) -> float:
        """A phase's barrier under noise over the noise-free barrier (SC10: > 2, noise dominates)."""
        barrier = rounds(self.hosts) * ROUND_S
        return (self.runtime_s / PHASES - WORK_S[self.experiment]) / barrier if barrier else math.inf


def _job(experiment: str, hosts: int, latency_s: float) -> Job:
    return Job((hosts,), (PHASES,), WORK_S[experiment], "barrier", latency_s, False, len(SEEDS), SEEDS[0])


def simulate_default(experiment: str, signature: str, hosts: int) -> Point:
    sim = simulate(parse_noise(SIGNATURES[signature]), _job(experiment, hosts, ROUND_S))
    return Point(experiment, "simulate", signature, hosts, sim.point(hosts, PHASES).runtime_s)


def simulate_loggop(experiment: str, signature: str, hosts: int) -> Point:
    spec = parse_noise(SIGNATURES[signature])
    assert isinstance(spec, PeriodicNoise)
    sim = simulate_loggopsim(spec, _job(experiment, hosts, LogGP().L / 1e9))
    return Point(experiment, "simulate --model loggopsim", signature, hosts, sim.point(hosts, PHASES).runtime_s)


def loggopsim_point(sim, schedule: Path, experiment: str, signature: str, hosts: int, workdir: Path) -> Point:
    """LogGOPSim (tests.support.loggopsim.LogGOPSim) on `schedule` (hosts x PHASES), seeds 1-3."""
    spec = parse_noise(SIGNATURES[signature])
    assert isinstance(spec, PeriodicNoise)
    f = workdir / f"noise-{spec.period_s:g}.txt"
    f.write_text(trace_text(periodic_trace(spec.period_s * 1e9, spec.duration_s * 1e9)))
    ns = np.mean([sim.run(schedule, f, seed=s) for s in SEEDS])
    return Point(experiment, "LogGOPSim", signature, hosts, float(ns) / 1e9)


def dominance_scale(points: list[Point]) -> int | None:
    """The smallest host count at which a barrier under noise takes twice its noise-free time."""
    over = sorted(p.hosts for p in points if p.barrier_ratio >= 2)
    return over[0] if over else None
