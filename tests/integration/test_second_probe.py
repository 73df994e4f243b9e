"""Two jitterscope probes on one CPU (issue 17.3): each run recognises only its own threads (by
thread id), the other probe is a named source, never blamed on the hypervisor; the second
measure warns at start, naming the run that holds the CPU."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import jitterscope, probed_cpu, tracing_reason

pytestmark = pytest.mark.skipif(tracing_reason() is not None, reason=str(tracing_reason()))
OTHER = " (another jitterscope)"


def _source(summary: dict, name: str) -> dict | None:
    return next((s for s in summary["sources"] if s["kind"] == "thread" and s["name"] == name), None)


@pytest.mark.slow
def test_two_probes_on_one_cpu_name_each_other(tmp_path: Path) -> None:
    from jitterscope.measure.peers import other_probes

    cpu = probed_cpu()
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitterscope",
            "measure",
            "--cpus",
            str(cpu),
            "--duration",
            "5s",
            "--out",
            str(tmp_path / "first"),
            "--no-report",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not other_probes([cpu]) and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.1)
        assert other_probes([cpu]), "the first probe never started"
        second = jitterscope(
            "measure",
            "--cpus",
            str(cpu),
            "--duration",
            "1500ms",
            "--out",
            str(tmp_path / "second"),
            "--no-report",
            "--json",
            timeout=120,
            check=True,
        )
    finally:
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    warning = [x for x in second.stderr.splitlines() if "another jitterscope probe" in x]
    assert warning and str(tmp_path / "first") in warning[0] and f"CPU {cpu}" in warning[0]
    for run, peer in (("first", "second"), ("second", "first")):
        s = json.loads((tmp_path / run / "summary.json").read_text())
        other = _source(s, f"js-probe/{cpu}{OTHER}")
        assert other is not None, f"{run}: the other probe is not a named source: {[x['name'] for x in s['sources']]}"
        # While one probe ran the other waited: the time named after the other probe is the other's time
        # on the CPU in the runs' overlap (from its own detours), not a share of unexplained time.
        ran = _on_cpu_s(tmp_path / peer, _window(tmp_path / run, tmp_path / peer))
        assert 0.85 < other["total_ns"] / 1e9 / ran < 1.15, (run, other["total_ns"], ran, s["unexplained"])
        assert _source(s, f"js-probe/{cpu}") is None  # our own probe thread is never a source


def _probe(run: Path) -> tuple[dict, dict]:
    meta = json.loads((run / "meta.json").read_text())
    (probe,) = meta["probe"].values()
    return meta, probe


def _window(a: Path, b: Path) -> tuple[int, int]:
    """The TSC interval both probes measured (one TSC: the runs share a clock)."""
    (_, pa), (_, pb) = _probe(a), _probe(b)
    return max(pa["first_tsc"], pb["first_tsc"]), min(pa["last_tsc"], pb["last_tsc"])


def _on_cpu_s(run: Path, window: tuple[int, int]) -> float:
    """Seconds of `window` in which this run's probe held its CPU: the window less its detours."""
    import numpy as np
    import pyarrow.parquet as pq

    meta, _ = _probe(run)
    hz, t0 = float(meta["tsc_hz"]), int(meta["t0_tsc"])
    det = pq.read_table(run / "detours.parquet", columns=["start_ns", "duration_ns"])
    start = det["start_ns"].to_numpy() * (hz / 1e9) + t0
    end = start + det["duration_ns"].to_numpy() * (hz / 1e9)
    lo, hi = window
    away = (np.clip(end, lo, hi) - np.clip(start, lo, hi)).sum()
    return float((hi - lo) - away) / hz
