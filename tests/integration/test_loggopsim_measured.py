"""LogGOPSim as an oracle on a real measured run (test_loggopsim_oracle.py has the rest): one CPU
measured for 2 s (SCHED_FIFO, no tracing), exported with `export --format loggopsim`, simulated by both
within 1%, and the export read back exactly.  The measurement keeps this file in the machine
group; the simulations on made-up noise run beside the other tests."""

from __future__ import annotations

import pytest

from jitterscope.simulate.loggop import run_trace
from jitterscope.simulate.spec import TraceNoise
from tests.integration.conftest import jitterscope, probed_cpu

from .test_loggopsim_oracle import TOLERANCE, _ours, _theirs, build_schedules

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def schedules(loggopsim, tmp_path_factory):
    return build_schedules(loggopsim, tmp_path_factory)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A real run of one CPU (2 s, no tracing, the probe at SCHED_FIFO 1) and its `export --format loggopsim`.

    At SCHED_OTHER on a loaded machine (CI hosts are shared) the probe's noise is the other tasks' time
    slices: a fifth of the CPU in detours of 3-8 ms, which put 1 ms-phase hosts rounds apart, where
    `--model loggopsim` is documented as not exact (docs/commands/simulate.md); one such run gave 1.35%.
    At SCHED_FIFO the noise is the kernel's (interrupts, kernel threads, RT throttling), on a quiet host
    or a busy one, and the claim is the one the docs make for such noise."""
    d = tmp_path_factory.mktemp("measured")
    run = d / "run"
    jitterscope(
        "measure",
        "--cpus",
        str(probed_cpu()),
        "--duration",
        "2s",
        "--priority",
        "fifo:1",
        "--no-trace",
        "--out",
        str(run),
        check=True,
    )
    jitterscope("export", str(run), "--format", "loggopsim", "-o", str(d / "noise.txt"), check=True)
    return run, d / "noise.txt"


@pytest.mark.parametrize("cosched", [False, True], ids=["independent", "cosched"])
@pytest.mark.parametrize("hosts", [8, 1024])
def test_measured_run_within_1pct(loggopsim, schedules, measured, hosts, cosched):
    run, exported = measured
    theirs = _theirs(loggopsim, schedules[hosts], exported, cosched)
    ours = _ours(TraceNoise(run, str(run)), hosts, cosched)
    assert abs(ours / theirs - 1) <= TOLERANCE, (ours, theirs, _shape(run))


def _shape(run) -> str:
    """The measured noise's long detours, for a failure's message: under a CPU hog with the probe at FIFO 1
    they are the fair server's two 50 ms grants and the result is exact (5 of 5 runs here); the 1.45% and 1.7%
    seen twice in the suite came with noise this did not yet describe."""
    d = run_trace(str(run)).durations
    long = sorted(int(x) // 1000 for x in d[d >= 1_000_000])
    return f"{len(d)} detours, {d.sum() / 1e6:.1f} ms; those of 1 ms or more (us): {long}"


def test_export_is_read_exactly_as_written(loggopsim, schedules, measured, tmp_path):
    """LogGOPSim reads every exported detour and no more; with a final newline (what the export
    wrote before) it reads one more, made of uninitialised values."""
    run, exported = measured
    written = len(run_trace(str(run)).starts)
    assert loggopsim.noise_events(schedules[8], exported) == written
    with_newline = tmp_path / "newline.txt"
    with_newline.write_text(exported.read_text() + "\n")
    assert loggopsim.noise_events(schedules[8], with_newline) == written + 1
