"""whatif dvfs end to end: a sync run of a real multithreaded program (xz -T2) replayed; bad input."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from jitterscope.sync.schema import SEGMENTS
from tests.integration.conftest import jitterscope
from tests.support import svg as figure
from tests.unit.test_whatif_cpufreq import stand_in

ORIGINAL = (1_200_000, 3_600_000)


@pytest.fixture(scope="module")
def xz_run(tmp_path_factory) -> Path:
    if not shutil.which("xz"):
        pytest.skip("xz not installed (apt-get install xz-utils)")
    d = tmp_path_factory.mktemp("whatif")
    data = d / "data.bin"
    data.write_bytes((os.urandom(1 << 19) + bytes(range(256)) * 2048) * 4)
    out = d / "run"
    p = jitterscope(
        "sync",
        "--no-trace",
        "--no-report",
        "--json",
        "--out",
        str(out),
        "--",
        "xz",
        "-T2",
        "-k",
        "-f",
        "-3",
        str(data),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    return out


@pytest.mark.slow
def test_compensated_between_ideal_and_recorded(xz_run, tmp_path):
    svg, csv = tmp_path / "f.svg", tmp_path / "f.csv"
    p = jitterscope(
        "whatif",
        "dvfs",
        str(xz_run),
        "--warmup",
        "0",
        "--plot",
        str(svg),
        "--trace-out",
        str(csv),
        "--apply",
        "--json",
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["replayed_ns"] == pytest.approx(r["recorded_ns"], rel=0.01)  # the replay reproduces the run
    assert r["ideal_ns"] <= r["replayed_ns"]
    for k in r["by_k"]:
        assert r["ideal_ns"] * 0.999 <= k["run_ns"] <= r["replayed_ns"] * 1.001, k
        assert k["energy"] >= 1.0
    best = min(r["by_k"], key=lambda k: (k["run_ns"], k["k"]))
    assert r["best_k"] == best["k"] and [k["k"] for k in r["by_k"]] == [1, 2, 4]
    assert figure.read(svg).shows("DVFS factor f/f0", "subframe of thread", "k = 1", "k = 4")
    assert csv.read_text().startswith("k,tid,subframe")
    if not Path("/sys/devices/system/cpu/cpu0/cpufreq").exists():
        assert r["apply"]["status"].startswith("skipped: this host has no cpufreq for CPU")
    p = jitterscope("whatif", "dvfs", str(xz_run), "--reactivity", "1", "--quantize", "ceil", timeout=300)
    assert p.returncode == 0 and "Ideal (no jitter)" in p.stdout and "best reactivity: k = 1" in p.stdout


@pytest.mark.slow
def test_run_without_compute_segments(xz_run, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(xz_run, bad)
    pq.write_table(SEGMENTS.empty_table(), bad / "segments.parquet")
    p = jitterscope("whatif", "dvfs", str(bad), timeout=120)
    assert p.returncode == 2 and "no compute segments" in p.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--table", "1.05:1.2:0.05"], "must contain the nominal factor 1.0"),
        (["--reactivity", "0"], "--reactivity"),
        (["--subframe", "5us"], "--subframe"),
    ],
)
@pytest.mark.free
def test_bad_options(tmp_path, args, msg):
    p = jitterscope("whatif", "dvfs", str(tmp_path), *args, timeout=60)
    assert p.returncode == 2 and msg in p.stderr.strip().splitlines()[-1], p.stderr


@pytest.mark.free
def test_not_a_sync_run(tmp_path):
    p = jitterscope("whatif", "dvfs", str(tmp_path), timeout=60)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()[-1]) < 300


def _khz(f: Path) -> int:
    # The stand-in's files are regular files: between the tool's truncate and its write a reader sees
    # nothing (a sysfs attribute is replaced whole), so an empty read is a write in flight: read again.
    for _ in range(200):
        text = f.read_text()
        if text.strip():
            return int(text)
        time.sleep(0.001)
    raise AssertionError(f"{f} stayed empty")


def _limits(root: Path) -> set[tuple[int, int]]:
    return {(_khz(d / "scaling_min_freq"), _khz(d / "scaling_max_freq")) for d in root.glob("cpu*/cpufreq")}


@pytest.mark.slow
def test_apply_on_a_stand_in_cpufreq_root(xz_run, tmp_path):
    """This VM has no cpufreq: --apply runs against a STAND-IN tree (the output says so) and must pin the
    nominal frequency, drive limits from the table, and leave every file as it found it."""
    root = stand_in(tmp_path / "cpu")
    env = {**os.environ, "JITTERSCOPE_CPUFREQ_ROOT": str(root)}
    p = jitterscope("whatif", "dvfs", str(xz_run), "--reactivity", "1", "--apply", "--json", env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    a = json.loads(p.stdout)["apply"]
    assert a["status"] == "applied" and a["stand_in"] and "STAND-IN" in a["note"]
    assert a["frequencies_khz"]["0"]["1"] == 3_000_000 and a["frequencies_khz"]["0"]["1.2"] == 3_600_000
    assert a["nominal_s"] > 0 and a["controlled_s"] > 0 and a["limit_changes"] >= 0
    assert _limits(root) == {ORIGINAL}


def _start_apply(xz_run: Path, root: Path) -> subprocess.Popen:
    env = {**os.environ, "JITTERSCOPE_CPUFREQ_ROOT": str(root)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitterscope", "whatif", "dvfs", str(xz_run), "--reactivity", "1", "--apply"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while _limits(root) == {ORIGINAL} and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert _limits(root) != {ORIGINAL}, "the limits never changed"
    return proc


@pytest.mark.slow
def test_apply_killed_is_restored_by_restore(xz_run, tmp_path):
    root = stand_in(tmp_path / "cpu")
    proc = _start_apply(xz_run, root)
    proc.kill()
    proc.wait(timeout=60)  # kill -9: only recovery can put the limits back
    p = jitterscope("restore", timeout=120)
    assert _limits(root) == {ORIGINAL}, p.stdout + p.stderr


@pytest.mark.slow
def test_apply_ctrl_c_restores(xz_run, tmp_path):
    root = stand_in(tmp_path / "cpu")
    proc = _start_apply(xz_run, root)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert _limits(root) == {ORIGINAL}
