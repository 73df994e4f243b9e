"""`simulate --model loggopsim`'s pieces against LogGOPSim's rules (Noise.hpp), without
LogGOPSim itself (tests/integration/test_loggopsim_oracle.py runs the real one)."""

from __future__ import annotations

import numpy as np
import pytest

from jitterscope import cli
from jitterscope.simulate import Job
from jitterscope.simulate.loggop import NoiseTrace, offsets, periodic_trace, run_bsp, trace_text
from tests.fixtures_runs import build_run

# detours at 100, 1000 (length 300), 5000, 9000: LogGOPSim's trace length is 9000
TRACE = NoiseTrace(np.array([100, 1000, 5000, 9000]), np.array([50, 300, 20, 7]))


def _noise(t: int, length: int, offset: int = 0) -> int:
    return int(TRACE.noise(np.array([t]), np.array([offset]), length)[0])


def test_in_progress_detour_counts_its_remainder_and_starting_ones_count_whole():
    assert _noise(1100, 100) == 200  # inside the detour at 1000: 200 ns of it remain
    assert _noise(900, 200) == 300  # the detour at 1000 starts inside the window
    assert _noise(1400, 100) == 0


def test_the_first_detour_is_never_seen_from_before_it_and_the_last_never_counts():
    assert _noise(50, 100) == 0  # [50, 150) covers the detour at 100, which LogGOPSim skips
    assert _noise(120, 10) == 30  # past its start, its remainder counts
    # positions wrap at (last start - length): the detour at 9000 is only the trace's end
    assert _noise(8990, 10) == 0
    assert _noise(8991 + (9000 - 10), 10) == _noise(8991, 10)


def test_offsets_are_std_mt19937_draws():
    # std::mt19937(1)'s first outputs are 1791095845 and 4282876139; the first is the
    # co-scheduled offset, the second host 0's own
    assert offsets(1, 1, 2**32 - 1, cosched=True)[0] == 1791095845
    assert offsets(1, 1, 2**32 - 1, cosched=False)[0] == 4282876139
    assert len(set(offsets(1, 8, 10**9, cosched=True))) == 1


def test_trace_text_has_no_final_newline():
    text = trace_text(periodic_trace(1e6, 25e3, periods=3), ["made by a test"])
    assert text.splitlines() == ["# made by a test", "0\t25000", "1000000\t25000", "2000000\t25000", "3000000\t25000"]
    assert not text.endswith("\n")


def test_no_noise_is_the_logp_formula():
    ends = run_bsp(None, 8, 5, 1_000_000, np.zeros((2, 8), dtype=np.int64))
    assert ends[-1].tolist() == [5 * (1_000_000 + 3 * 5500)] * 2
    job = Job((8,), (5,), 1e-3)
    assert job.rounds(8) == 3


@pytest.mark.parametrize(
    ("noise", "extra", "says"),
    [
        ("normal(mean=1ms,sd=1us)", [], "periodic(...) or a run"),  # a distribution has no trace
        ("periodic(period=1ms,duration=25us)", ["--sync", "allreduce"], "dissemination barrier only"),
        ("periodic(period=1us,duration=10ns)", [], "divides by zero"),  # 1 ms phases, a 1 ms trace
    ],
)
def test_bad_input_is_one_line_and_exit_2(noise, extra, says, capsys):
    argv = ["simulate", "--model", "loggopsim", "--noise", noise, "--nodes", "8", "--phases", "2", "--phase", "1ms"]
    assert cli.main([*argv, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err


def test_overhead_needs_the_loggopsim_model(capsys):
    argv = ["simulate", "--noise", "periodic(period=1ms,duration=25us)", "--nodes", "8", "--phases", "2"]
    assert cli.main([*argv, "--phase", "1ms", "--overhead", "2us"]) == 2
    assert "--model loggopsim" in capsys.readouterr().err


def test_a_run_of_several_cpus_is_refused(tmp_path, capsys):
    run = build_run(tmp_path / "run", cpus=[1, 3], seed=3)
    argv = ["simulate", "--model", "loggopsim", "--noise", str(run), "--nodes", "8", "--phases", "2", "--phase", "1us"]
    assert cli.main(argv) == 2
    assert "one CPU" in capsys.readouterr().err
