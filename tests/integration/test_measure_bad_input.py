"""Bad input: one line, exit code 2, no traceback, nothing left behind."""

import os
import signal

import pytest

from tests.support.cli_run import run_cli

from .conftest import jitterscope, probed_cpu


def _instances():
    """Trace instances left by jitterscope processes that have ended (a live
    run elsewhere on the machine, e.g. a monitor, owns its instance rightly)."""
    d = "/sys/kernel/tracing/instances"
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    return [n for n in names if n.startswith("jitterscope-") and not _alive(n.rsplit("-", 1)[-1])]


def _alive(pid: str) -> bool:
    return pid.isdigit() and os.path.exists(f"/proc/{pid}")


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--cpus", "999"], "CPU 999"),
        (["--cpus", "1-x"], "malformed CPU list"),
        (["--duration", "10"], "needs a unit"),
        (["--duration", "5 parsecs"], "--duration '5 parsecs'"),
        (["--threshold", "-1us"], "--threshold"),
        (["--priority", "fifo:500"], "out of range"),
        (["--out", "/proc/forbidden/run"], "no such directory /proc/forbidden"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, needle):
    """In-process (cli.main): what is checked is the value's refusal, not process start-up, which
    test_existing_run_directory_is_refused and test_bad_input_matrix.py's subprocess cases cover."""
    before = _instances()
    argv = ["measure", "--duration", "1s", *args] if "--duration" not in args else ["measure", *args]
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}  # main() sets them: not ours
    try:
        code, err = run_cli(argv, capsys)
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    assert code == 2, err
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not set(_instances()) - set(before)  # no instance of ours left behind


def test_existing_run_directory_is_refused(tmp_path):
    (tmp_path / "r").mkdir()
    proc = jitterscope("measure", "--duration", "1s", "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "already exists" in proc.stderr


def test_a_measurement_that_fails_midway_leaves_no_instance_and_no_run(tmp_path):
    """A failure after the trace instance exists (here raised from the
    before-probe hook): the instance and the half-made run directory go."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from jitterscope import errors
        from jitterscope.measure import lifecycle as measure_core
        def boom():
            raise errors.JitterscopeError("injected failure after tracing started")
        try:
            measure_core.measure([{probed_cpu()}], 1e9, 1000.0, Path({str(tmp_path / "r")!r}), before_probe=boom)
        except errors.JitterscopeError as e:
            print("failed:", e)
    """)
    before = _instances()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "failed: injected failure" in proc.stdout, proc.stderr
    assert not set(_instances()) - set(before)
    assert not (tmp_path / "r").exists()
