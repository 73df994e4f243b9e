"""The C programs under AddressSanitizer + UndefinedBehaviorSanitizer.

One sanitizer build (tests/support/sanitize.py) per session, shared with test_parser_fuzz.py: the probe
for half a second on one CPU, the interposer preloaded into the sync goldens (thread creation, contended
mutexes, condvars, barriers, fork).  Each must exit cleanly with no sanitizer report.  The parser, which
needs neither root nor the machine alone, is run and fuzzed beside the other tests in test_parser_fuzz.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from jitterscope.sync import records as R
from jitterscope.sysinfo import online_cpus
from tests.support import sanitize
from tests.support.once import once

pytestmark = pytest.mark.native

GOLD = Path(__file__).parent / "sync_programs" / "syncgold.c"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mlock in the probe, SCHED_FIFO in syncgold)")


@pytest.fixture(scope="module")
def san(tmp_path_factory) -> sanitize.Sanitized:
    if not sanitize.compiler():
        pytest.skip("no C compiler")
    return once(tmp_path_factory, "sanitized", sanitize.build)  # test_parser_fuzz's too


@pytest.fixture(scope="module")
def gold(san, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gold") / "syncgold"
    subprocess.run([str(sanitize.compiler()), "-O1", "-g", "-pthread", "-o", str(out), str(GOLD)], check=True)
    return out


def _clean(p: subprocess.CompletedProcess[str]) -> None:
    found = sanitize.reports(p.stderr)
    assert not found, "sanitizer report:\n" + p.stderr[-4000:]
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}"


@root_only
def test_probe_half_a_second_on_one_cpu(san, tmp_path):
    cpu = online_cpus()[-1]
    out = tmp_path / "probe.bin"
    p = subprocess.run(
        [str(san.probe), "--cpus", str(cpu), "--threshold-cycles", "2600", "--out", str(out)]
        + ["--duration-ns", "500000000"],
        capture_output=True,
        text=True,
        env=sanitize.env(),
        timeout=30,
    )
    _clean(p)
    assert '"event": "end"' in p.stdout and out.stat().st_size > 0


@root_only
@pytest.mark.parametrize(
    "mode", ["hold {cpu} 20", "bw {cpu} 10", "barrier {cpu} 10", "tree {cpu}", "fork", "frames 20"]
)
def test_interposer_in_the_sync_goldens(san, gold, tmp_path, mode):
    raw = tmp_path / "raw"
    raw.mkdir()
    args = mode.format(cpu=online_cpus()[-1]).split()
    p = subprocess.run(
        [str(gold), *args],
        capture_output=True,
        text=True,
        env=sanitize.env(LD_PRELOAD=san.preload, JS_SYNC_DIR=str(raw)),
        timeout=60,
    )
    _clean(p)
    assert sum(len(lg.records) for lg in R.read_logs(raw)) > 0  # the interposer was loaded and recorded
