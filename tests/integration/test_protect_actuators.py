"""Every actuator on this machine: the self-reporting Syn 'C' (jitterscope-synload) on the best-effort CPU,
the controller beside it, protected and unprotected phases interleaved every 200 ms so load from other
processes hits both alike.  The claim (docs/commands/protect.md): best-effort progress relative to
unthrottled is Ts/(Ts+S) +- 0.03, at 100/900 and 500/500, when the CPU is the co-runner's alone.

Persistent excess is made certain with --signal always (every sample is over), so the duty cycle the
actuator achieves is what is measured.  Syn 'C' streams a 256 KiB buffer that stays in its L2, so its
progress is proportional to the CPU time it gets.  It runs at nice -19 in its own autogroup so that other
processes on the CPU do not decide its unprotected rate.

One run per case, no retry.  The ratio's interval comes from the run's own samples (blocks of 20 ms within
the phases: delivery.block_rates), at LEVEL: a case fails only when the whole interval lies outside the
law +- 0.03, so each fails falsely with probability at most 1 - LEVEL (0.1%; under 1% for the file's
eight cases).  The claim needs the CPU to itself: on this shared machine another engineer's job may take
it, and then the test asserts what the tool says instead (the CPU was shared, the ratio is not the law's).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy import stats

from jitterscope.cli import main
from jitterscope.native_bin import native_bin
from jitterscope.protect.delivery import TOLERANCE, block_rates, ratio_interval
from jitterscope.protect.render import render
from jitterscope.sysinfo import online_cpus

pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="actuators need root (SCHED_FIFO, cgroups)"),
    pytest.mark.skipif(len(online_cpus()) < 2, reason="needs two CPUs (critical and best-effort)"),
]
LEVEL = 0.999
PHASE_NS = 200e6
CPU = online_cpus()[-1]
NICE_19 = "echo -19 > /proc/self/autogroup; exec nice -n -19"


def _synload() -> str:
    return f"sh -c '{NICE_19} {native_bin('jitterscope-synload')} --buffer 262144'"


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], actuator: str, ts: str, s: str) -> tuple[dict, Path]:
    out = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
    argv = ["protect", "--best-effort-cmd", _synload(), "--cpus", str(CPU), "--actuator", actuator]
    argv += ["--signal", "always", "--sample", ts, "--suspend", s, "--duration", "1600ms", "--compare", "200ms"]
    code = main([*argv, "--out", str(out), "--json"])
    got = capsys.readouterr()
    assert code == 0, got.err
    return dict(json.loads(got.out)), out


def _samples(out: Path) -> dict[str, np.ndarray]:
    t = pq.read_table(out / "samples.parquet")
    flags = t["flags"].to_numpy()
    return {
        "t_ns": t["t_ns"].to_numpy(),
        "flags": flags,
        **{k: t[k].to_numpy(zero_copy_only=False) for k in ("progress_bytes", "cpu_ns")},
    }


def _says_shared(summ: dict, out: Path) -> None:
    """The claim cannot be tested on a shared CPU: the tool must say so, in the summary and on the terminal."""
    d = summ["delivery"]
    assert d["within_tolerance"] is None and "the best-effort CPU was shared" in d["note"], d
    meta = json.loads((out / "meta.json").read_text())
    assert f"WARNING: {d['note']}" in render(summ, meta, str(out))


def _claim(tmp_path: Path, capsys: pytest.CaptureFixture[str], actuator: str, ts: str, s: str, law: float) -> dict:
    summ, out = _run(tmp_path, capsys, actuator, ts, s)
    d = summ["delivery"]
    assert d["law_share"] == pytest.approx(law) and d["persistent_excess"], d
    if d["shared"]:
        _says_shared(summ, out)
        return summ
    samples = _samples(out)
    why = (
        f"{actuator} {ts}/{s}: progress ratio {summ['progress_ratio']:.3f}, CPU-time ratio {d['cpu_ratio']:.3f}, "
        f"law {law:.2f} +- {TOLERANCE} (other work took {d['other_share']:.1%} of the CPU; suspensions "
        f"{d['suspension_excess_ns']:+.0f} ns beyond S)"
    )
    # what the actuator controls: the programs' CPU time
    cpu = ratio_interval(*block_rates(samples, PHASE_NS, "cpu_ns"), LEVEL)
    assert cpu is not None and cpu[0] <= law + TOLERANCE and cpu[1] >= law - TOLERANCE, (cpu, why)
    ci = ratio_interval(*block_rates(samples, PHASE_NS, "progress_bytes"), LEVEL)
    assert ci is not None
    if not (ci[0] <= law + TOLERANCE and ci[1] >= law - TOLERANCE):
        # their progress per CPU-second changed when suspended (delivery.py): the tool must say so
        assert d["note"] is not None and "progress per CPU-second" in d["note"], (ci, why, d["note"])
    assert d["within_tolerance"] is not None and (d["note"] is None) == d["within_tolerance"], d
    return summ


@pytest.mark.parametrize("actuator", ["rt", "sigstop", "freezer:v1", "freezer:v2"])
def test_duty_at_100_900(tmp_path: Path, capsys: pytest.CaptureFixture[str], actuator: str):
    summ = _claim(tmp_path, capsys, actuator, "100us", "900us", 0.10)
    cpu = next(iter(summ["cpus"].values()))
    # the actuation latency distribution is reported: decision to the program's last progress
    assert cpu["stop_latency_ns"] is not None and cpu["suspension_ns"]["p50"] >= 900e3
    assert cpu["sampling_ns"]["p50"] == pytest.approx(100e3, rel=0.5)
    if actuator == "rt":
        assert cpu["spin_share"] > 0.3 and cpu["clipped"] < cpu["suspensions"] * 0.1


@pytest.mark.parametrize("actuator", ["rt", "sigstop", "freezer"])
def test_duty_at_500_500(tmp_path: Path, capsys: pytest.CaptureFixture[str], actuator: str):
    _claim(tmp_path, capsys, actuator, "500us", "500us", 0.50)


@pytest.fixture
def rival() -> Iterator[subprocess.Popen[bytes]]:
    """A busy loop on the best-effort CPU with the co-runner's own weight (nice -19, its own autogroup)."""
    p = subprocess.Popen(["taskset", "-c", str(CPU), "sh", "-c", f"{NICE_19} sh -c 'while :; do :; done'"])
    yield p
    p.kill()
    p.wait()


def test_a_shared_cpu_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str], rival):
    """With other work on the CPU the ratio is not the law's (it came out 0.15-0.20 at 100/900): said, not hidden."""
    summ, out = _run(tmp_path, capsys, "sigstop", "100us", "900us")
    assert summ["delivery"]["shared"] and summ["delivery"]["other_share"] > 0.2, summ["delivery"]
    _says_shared(summ, out)


def test_cfs_bandwidth_caps_the_cpu_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """CFS quota is an absolute cap (1 ms of CPU per 10 ms), so the protected share is measured, not the ratio
    (which depends on how much CPU the program got unprotected): its interval over the protected blocks."""
    summ, out = _run(tmp_path, capsys, "cfs", "1ms", "9ms")
    if summ["delivery"]["shared"]:  # other work may take part of the quota's time
        _says_shared(summ, out)
        return
    shares = block_rates(_samples(out), PHASE_NS, "cpu_ns")[0] / 1e9
    half = float(stats.t.ppf(0.5 + LEVEL / 2, len(shares) - 1)) * shares.std(ddof=1) / np.sqrt(len(shares))
    assert abs(shares.mean() - 0.10) <= TOLERANCE + half, (shares.mean(), half)


def test_cfs_refuses_what_it_cannot_express(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code = main(["protect", "--best-effort-cmd", "true", "--actuator", "cfs", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "quota minimum is 1 ms" in err and "--sample 1ms --suspend 9ms" in err
    assert not (tmp_path / "r").exists()


def test_deadline_blocker_works_or_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """SCHED_DEADLINE needs the CPU in its own root domain; on a machine with one domain it refuses in one line."""
    code = main(
        [
            "protect",
            "--best-effort-cmd",
            _synload(),
            "--actuator",
            "deadline",
            "--signal",
            "always",
            "--duration",
            "2400ms",
            "--compare",
            "200ms",
            "--out",
            str(tmp_path / "r"),
            "--json",
        ]
    )
    got = capsys.readouterr()
    if code == 2:
        assert "root domain" in got.err and len(got.err.strip().splitlines()) == 1
        assert not (tmp_path / "r").exists()
        pytest.skip(f"SCHED_DEADLINE blocker unavailable here: {got.err.strip()}")
    assert abs(json.loads(got.out)["progress_ratio"] - 0.10) <= 0.03
