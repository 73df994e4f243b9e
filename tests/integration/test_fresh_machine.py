"""A fresh machine, and a machine shared by concurrent runs, are left as found.

Each test builds its tracefs state in a private mount namespace (machine.py):
absent, as after boot, or mounted by someone else.  Whatever this machine's own
state, the suite therefore exercises both, and nothing here changes the mounts
other work on the machine sees.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from .conftest import needs_tracing, probed_cpu
from .machine import ROOT, in_namespace, js, needs_namespace, say_tracefs, started, tracefs_after

pytestmark = [needs_namespace, needs_tracing, pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture
def state(tmp_path: Path) -> dict[str, str]:
    """A private journal directory, so recovery here touches only these tests' journals."""
    return {"JITTERSCOPE_STATE_DIR": str(tmp_path / "state")}


def measure(out: Path, seconds: str = "1s", *extra: str) -> str:
    return js(
        "measure",
        "--cpus",
        str(probed_cpu()),
        "--duration",
        seconds,
        "--no-report",
        "--json",
        "--out",
        str(out),
        *extra,
    )


def traced(out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["tracing"], "the run should be traced"
    assert any(s["kind"] != "unexplained" for s in summary["sources"]), "attribution found no source"
    return summary


def test_measure_mounts_tracefs_itself_and_unmounts_it(tmp_path: Path, state: dict[str, str]) -> None:
    out = tmp_path / "run"
    proc = in_namespace(measure(out), tracefs="absent", env=state)
    assert proc.returncode == 0, proc.stderr
    traced(out)
    assert tracefs_after(proc) == ""  # mounted for the run, unmounted after it


def test_measure_leaves_someone_elses_tracefs_mounted(tmp_path: Path, state: dict[str, str]) -> None:
    out = tmp_path / "run"
    proc = in_namespace(measure(out), tracefs="theirs", env=state)
    assert proc.returncode == 0, proc.stderr
    traced(out)
    assert tracefs_after(proc) == "tracefs"  # theirs: never unmounted


def test_concurrent_measures_share_the_mount_and_the_last_unmounts(tmp_path: Path, state: dict[str, str]) -> None:
    # The first run mounts tracefs and ends first (SIGTERM: it finishes its run), while
    # the second still traces: it must neither unmount under the second nor leave the
    # mount behind when the second ends.
    a, b = tmp_path / "a", tmp_path / "b"
    script = (
        f"{measure(a, '60s')} > /dev/null & pa=$!; {started(a)}; "
        f"{measure(b, '60s')} > /dev/null & pb=$!; {started(b)}; "
        f"kill -TERM $pa; wait $pa; ra=$?; {say_tracefs('mid')}; "
        f"kill -TERM $pb; wait $pb; rb=$?; [ $ra = 0 ] && [ $rb = 0 ]"
    )
    proc = in_namespace(script, tracefs="absent", env=state)
    assert proc.returncode == 0, proc.stderr
    traced(a)
    traced(b)
    assert "mid=1" in proc.stderr  # still mounted for the second run when the first ended
    assert tracefs_after(proc) == ""


def test_killed_measure_is_restored_and_its_run_analysed(tmp_path: Path, state: dict[str, str]) -> None:
    # kill -9 leaves tracefs mounted and a trace instance behind; the run's watchdog (not a later
    # command) undoes its journal: instance removed, tracefs unmounted, so `restore` finds nothing
    out = tmp_path / "run"
    journals = shlex.quote(str(Path(state["JITTERSCOPE_STATE_DIR"]) / "journal"))
    script = (
        f"{measure(out, '30s')} > /dev/null 2>&1 & pid=$!; {started(out)}; sleep 1.5; "
        f"kill -9 $pid; wait $pid; "
        f"i=0; while ls {journals}/*.jsonl > /dev/null 2>&1; do "
        f"[ $i -lt 600 ] || {{ echo 'the watchdog left its journal' >&2; cat {journals}/*.jsonl >&2; exit 1; }}; "
        f"sleep 0.1; i=$((i + 1)); done; "
        f"{say_tracefs('watched-mounts')}; {js('restore')}"
    )
    proc = in_namespace(script, tracefs="absent", env=state)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "watched-mounts=0" in proc.stderr, proc.stderr  # the watchdog unmounted what the run mounted
    assert "nothing to restore" in proc.stdout + proc.stderr, proc.stdout
    assert tracefs_after(proc) == ""
    again = in_namespace(f"{js('analyze', '--no-report', str(out))}", tracefs="absent", env=state)
    assert again.returncode == 0, again.stderr
    summary = traced(out)
    assert summary["run"]["duration_s"] > 0  # (how long depends on the load: it is what was measured)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["interrupted"] and "recovered" in meta


def test_tracefs_tests_set_up_tracefs_themselves(tmp_path: Path, state: dict[str, str]) -> None:
    """The tests that use tracefs directly pass on a machine where it is not mounted."""
    tests = [str(ROOT / "tests/integration" / t) for t in ("test_trace_session.py", "test_clock_alignment.py")]
    cmd = " ".join(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-rs",  # a skip names its reason in the failure
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "pt"),
            *tests,
        ]
    )
    proc = in_namespace(cmd, tracefs="absent", env={**state, "PYTHONDONTWRITEBYTECODE": "1"}, timeout=170)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert " passed" in proc.stdout and " skipped" not in proc.stdout, proc.stdout[-2000:]
    assert tracefs_after(proc) == ""
