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
    for run in ("first", "second"):
        s = json.loads((tmp_path / run / "summary.json").read_text())
        other = _source(s, f"js-probe/{cpu}{OTHER}")
        assert other is not None, f"{run}: the other probe is not a named source: {[x['name'] for x in s['sources']]}"
        assert other["total_ns"] > s["unexplained"]["total_ns"], f"{run}: the other probe's time went to unexplained"
        assert _source(s, f"js-probe/{cpu}") is None  # our own probe thread is never a source
