"""`jitterscope check` on the real kernel: healthy on a quiet CPU, unhealthy when `jitterscope inject` adds a
daemon that the baseline did not have, and exit code 2 (one line, before measuring) on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import jitterscope, needs_tracing, probed_cpu

# SCHED_FIFO keeps other sessions' ordinary processes off the probed CPU (as in test_compare_runs), so its
# noise is the kernel's, the hypervisor's and real-time throttling's (50 ms a second: 5%); the injected
# daemon runs at FIFO 50, above the probe, as a real RT daemon would, and takes 20% of the CPU.
PRIO = "fifo:10"
INJ = "js-check-inj"  # a name no other test's injector uses on this shared machine
LIMIT = "15%"  # noise limit: 5-7% quiet (throttling + kernel + hypervisor) vs over 20% with the daemon


@needs_tracing
def test_quiet_cpu_is_healthy_in_one_line() -> None:
    cpu = probed_cpu()
    proc = jitterscope("check", "--cpus", str(cpu), "--priority", PRIO, "--max-noise", LIMIT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    assert lines[0].startswith(f"JITTERSCOPE OK - CPU {cpu}, "), lines[0]
    assert "| noise=" in lines[0] and ";15 " in lines[0]  # perfdata carries the limit


@needs_tracing
def test_injected_daemon_against_a_baseline_without_it_is_unhealthy(tmp_path: Path) -> None:
    cpu = probed_cpu()
    base = tmp_path / "base"
    jitterscope(
        "measure", "--cpus", str(cpu), "--duration", "2s", "--priority", PRIO, "--no-report", "--out", str(base),
        check=True,
    )  # fmt: skip
    inj = subprocess.Popen(
        [sys.executable, "-m", "jitterscope", "inject", "--cpu", str(cpu), "--period", "10ms", "--busy", "2ms",
         "--duration", "60s", "--name", INJ],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(0.3)
        # CPUs and priority come from the baseline
        proc = jitterscope("check", "--baseline", str(base), "--max-noise", LIMIT, "--json", timeout=120)
    finally:
        inj.terminate()
        inj.wait(timeout=10)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    v = json.loads(proc.stdout)
    assert v["status"] == "UNHEALTHY" and not v["healthy"]
    assert list(v["cpus"]) == [str(cpu)] and v["baseline"] == str(base)
    assert any(r.startswith(f"thread:{INJ} (new, +") for r in v["regressions"]), v["regressions"]
    # 2 ms every 10 ms is 200,000 ppm (less at most one period at each end of the 2 s) on top of the quiet noise
    assert v["cpus"][str(cpu)]["noise_ppm"] > 190_000
    assert f"CPU {cpu} noise" in " ".join(v["problems"])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "nothing to check against"),
        (["--max-noise", "5"], "malformed --max-noise '5'"),
        (["--max-noise", "150%"], "must be from 0% to 100%"),
        (["--max-detour", "5"], "needs a unit"),
        (["--baseline", "/nonexistent/run"], "no such run directory"),
        (["--max-p99", "1ms", "--cpus", "9999"], "9999"),
        (["--max-noise", "1%", "--alpha", "2"], "--alpha 2.0 must be between 0 and 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    t0 = time.monotonic()
    proc = jitterscope("check", *args, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jitterscope: error: ") and says in err[0], proc.stderr
    assert time.monotonic() - t0 < 30  # refused before measuring (a measurement is 2 s plus analysis)


def test_baseline_without_the_checked_cpu_is_refused(tmp_path: Path) -> None:
    from tests.fixtures_runs import build_run

    base = build_run(tmp_path / "base", cpus=[1], seed=7, duration_s=0.5)
    proc = jitterscope("check", "--baseline", str(base), "--cpus", "0", timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "the baseline" in proc.stderr and "has no CPU 0" in proc.stderr
