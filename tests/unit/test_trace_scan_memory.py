"""`jitterscope-traceparse --scan` (run when a capture is finished, on every CPU at once) keeps no
record at all (it runs no stack machine): its peak memory does not grow with the number of CPUs, while
a full parse of the same trace that keeps its records to the end, measured side by side, does; and what
it counts is what the full parse counts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support import synth as S

from .test_trace_parse import scan_view

pytestmark = S.needs_parser()

EVENTS = 100_000  # per CPU: ~6 MB of records (64 B per event) a full parse keeps
CPUS = 8
T0 = 1_000_000_000


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """The same storm of context switches on 1 CPU and on CPUS CPUs."""
    d = tmp_path_factory.mktemp("scan")
    a, b = S.switch("a", 100, "b", 101), S.switch("b", 101, "a", 100)
    one = S.write_trace(d / "one", {0: S.paginate([(T0 + k * 1000, a if k % 2 else b) for k in range(EVENTS)])})
    many = d / "many"
    shutil.copytree(one, many)
    for c in range(1, CPUS):
        shutil.copyfile(many / "cpu0.raw", many / f"cpu{c}.raw")
    return {1: one, CPUS: many}


def test_scan_memory_does_not_grow_with_the_cpus(traces: dict[int, Path], tmp_path: Path) -> None:
    scan = {n: S.parser_peak_kib(t, tmp_path / f"scan{n}", "--scan") for n, t in traces.items()}
    # a full parse told to spill its records only at the end keeps every CPU's: (CPUS - 1) x ~6 MB more, so
    # the check is not blind (test_trace_spill.py: spilled as it goes, a full parse does not grow either)
    full = {n: S.parser_peak_kib(t, tmp_path / f"full{n}", "--spill", str(1 << 40)) for n, t in traces.items()}
    grown = full[CPUS] - full[1]
    assert grown > (CPUS - 1) * EVENTS * 64 / 1024 * 0.8, f"full parse grew only {grown} KiB"
    assert scan[CPUS] - scan[1] < 0.1 * grown, f"scan peak {scan[1]} -> {scan[CPUS]} KiB with {CPUS} CPUs"
    counts = {m: json.loads((tmp_path / f"{m}{CPUS}" / "counts.json").read_text()) for m in ("scan", "full")}
    assert scan_view(counts["scan"]) == scan_view(counts["full"])
    assert sum(c["events"] for c in counts["scan"]["cpus"].values()) == CPUS * EVENTS  # every CPU scanned
