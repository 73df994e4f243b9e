"""LogGOPSim as an oracle: the real simulator, built from ../shared/peers, against
`simulate --model loggopsim` on the same job (P hosts x N phases of 1 ms + a dissemination
barrier), the same noise trace and the same offsets (LogGOPSim's std::mt19937 seeded with
S; simulate's replication j uses seed S + j).

Compared: the mean over seeds 1-3 of the maximum finishing time, within 1%.  Both sides are
deterministic for a seed, so the tolerance is the model's, not sampling's.  Co-scheduled
noise and long detours match to the nanosecond; independent short detours differ by up to
0.5% on single seeds (LogGOPSim's event order for messages queued behind several earlier
ones, docs/commands/simulate.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterscope.simulate import Job
from jitterscope.simulate.loggop import periodic_trace, simulate_loggopsim, trace_text
from jitterscope.simulate.spec import PeriodicNoise, parse_noise
from tests.integration.conftest import jitterscope, load_json
from tests.support.once import once

SEEDS = (1, 2, 3)
TOLERANCE = 0.01
WORK_NS = 1_000_000
PHASES = {8: 100, 1024: 20}  # 1,024 hosts x 20 phases: ~4 s to generate, ~1 s a LogGOPSim run
NOISES = ("periodic(period=1ms,duration=25us)", "periodic(period=100ms,duration=2.5ms)")

pytestmark = pytest.mark.slow


def build_schedules(loggopsim, tmp_path_factory) -> dict:
    """The BSP job of PHASES for each host count, as LogGOPSim schedules (made once per session)."""

    def make(d: Path) -> dict:
        return {p: loggopsim.schedule(p, n, WORK_NS, d / f"bsp{p}.bin") for p, n in PHASES.items()}

    return once(tmp_path_factory, "loggopsim-schedules", make)


@pytest.fixture(scope="module")
def schedules(loggopsim, tmp_path_factory):
    return build_schedules(loggopsim, tmp_path_factory)


def _ours(spec, hosts: int, cosched: bool) -> float:
    job = Job((hosts,), (PHASES[hosts],), WORK_NS / 1e9, "barrier", 2.5e-6, cosched, len(SEEDS), SEEDS[0])
    return simulate_loggopsim(spec, job).point(hosts, PHASES[hosts]).runtime_s * 1e9


def _theirs(loggopsim, schedule, trace_file, cosched: bool) -> float:
    return float(np.mean([loggopsim.run(schedule, trace_file, seed=s, cosched=cosched) for s in SEEDS]))


def test_no_noise_is_the_logp_formula(loggopsim, schedules):
    """N x (W + K x (2o + L)) with LogGP's defaults: the schedule is the job simulate models."""
    assert loggopsim.run(schedules[8]) == 100 * (WORK_NS + 3 * (2 * 1500 + 2500))
    assert loggopsim.run(schedules[1024]) == 20 * (WORK_NS + 10 * (2 * 1500 + 2500))


@pytest.mark.parametrize("cosched", [False, True], ids=["independent", "cosched"])
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("hosts", [8, 1024])
def test_periodic_noise_within_1pct(loggopsim, schedules, tmp_path, hosts, noise, cosched):
    spec = parse_noise(noise)
    assert isinstance(spec, PeriodicNoise)
    f = tmp_path / "noise.txt"
    f.write_text(trace_text(periodic_trace(spec.period_s * 1e9, spec.duration_s * 1e9)))
    theirs = _theirs(loggopsim, schedules[hosts], f, cosched)
    ours = _ours(spec, hosts, cosched)
    ideal = PHASES[hosts] * (WORK_NS + (3 if hosts == 8 else 10) * 5500)
    assert theirs > ideal * 1.002  # the noise costs something: the comparison is not of two ideal runs
    assert abs(ours / theirs - 1) <= TOLERANCE, (ours, theirs)


def test_command_line_matches_loggopsim_per_seed(loggopsim, schedules, tmp_path):
    """`simulate --model loggopsim --json`, co-scheduled noise: the same offsets, so each
    replication equals LogGOPSim's run with that seed to the nanosecond."""
    f = tmp_path / "noise.txt"
    f.write_text(trace_text(periodic_trace(100e6, 2.5e6)))
    out = jitterscope(
        "simulate",
        "--model",
        "loggopsim",
        "--noise",
        "periodic(period=100ms,duration=2.5ms)",
        "--cosched",
        "--nodes",
        "8",
        "--phases",
        "100",
        "--phase",
        "1ms",
        "--replications",
        "3",
        "--seed",
        "1",
        "--json",
        check=True,
    )
    data = load_json(out.stdout)
    assert data["model"]["kind"] == "loggopsim"
    theirs = _theirs(loggopsim, schedules[8], f, cosched=True)
    assert data["results"][0]["runtime_s"] * 1e9 == pytest.approx(theirs, rel=1e-12)
