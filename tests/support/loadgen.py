"""A reproducible burst of kernel events for tests and benchmarks of tracing."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

_PINGPONG = """
import os, time
os.sched_setaffinity(0, {{{cpu}}})
a, b = os.pipe(); c, d = os.pipe()
if os.fork() == 0:
    os.close(b); os.close(c)  # so the parent's close is an EOF here
    while True:
        if not os.read(a, 1): os._exit(0)
        os.write(d, b"x")
os.close(a); os.close(d)
os.write(b, b"x"); os.read(c, 1)
os.write(1, b"ready\\n")  # the first round trip made: switch_storm returns
end = time.monotonic() + {seconds}
while time.monotonic() < end:
    for _ in range(200):
        os.write(b, b"x"); os.read(c, 1)
os.close(b)
os.wait()
"""


def switch_storm(cpu: int, seconds: float, nice: int = 0) -> subprocess.Popen:
    """Two processes on `cpu` ping-ponging a byte: a context switch every few µs; at `nice` (a negative one
    as root only, else at ours).

    Returns the parent once the two have passed their first byte (a Python start-up under a CPU hog took most
    of a 2 s capture: 1,632 events, c70); wait() on it returns once both processes have exited.
    """
    code = textwrap.dedent(_PINGPONG.format(cpu=int(cpu), seconds=float(seconds)))
    if nice < 0 and os.geteuid() != 0:
        nice = 0
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, preexec_fn=(lambda: os.nice(nice)) if nice else None
    )
    assert proc.stdout is not None
    with proc.stdout:
        ready = select.select([proc.stdout], [], [], READY_TIMEOUT)[0] and proc.stdout.readline() == b"ready\n"
    if ready:
        return proc
    proc.kill()
    proc.wait()
    raise RuntimeError(f"the context-switch storm on CPU {cpu} did not start in {READY_TIMEOUT} s")


READY_TIMEOUT = 60


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def killed_measure(out: Path, cpu: int, seconds: float) -> bool:
    """A storm on `cpu` under `jitterscope measure`, the measure killed (kill -9) once its raw capture is
    whole: the run directory `jitterscope analyze` rebuilds.  False when no capture was kept."""
    js = [sys.executable, "-m", "jitterscope"]
    m = subprocess.Popen(
        [*js, "measure", "--cpus", str(cpu), "--duration", f"{seconds:g}s", "--out", str(out), "--no-report"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    storm: subprocess.Popen | None = None
    try:
        while m.poll() is None:
            # the storm once the probe and trace run (meta.json's stage), however slow the start (c28, under a CPU
            # hog: a storm started 1 s after the measure left 5,098 events); and not before, where it once held
            # the trace instance's buffer resize, which waits for CPU `cpu`'s kworker, for 5 minutes (2026-11-28).
            # At nice -5: a storm shares its CPU with the probe, the hog and the other tests' processes, and at
            # nice 0 it once had 5,578 events in the 2 s (c45, under the hog).  It ends by itself soon after the
            # measurement should have: pinned at nice -5 it starves the CPU's bound kworkers, and a measure
            # waiting on ext4 writeback (which needs them) waited on the storm, which waited on the measure:
            # 300 s, twice on 2026-11-29 (dmesg: that CPU's workqueue pool hung, wb_workfn in flight)
            if storm is None and '"capturing"' in _text(out / "meta.json"):
                storm = switch_storm(cpu, seconds + 3, nice=-5)
            if '"captured"' in _text(out / "capture.json"):
                m.send_signal(signal.SIGKILL)  # before its own analysis can finish
                break
            time.sleep(0.02)
        m.wait()
    finally:
        if storm is not None:
            storm.kill()  # its child reads the end of the pipe and leaves too
            storm.wait()
    subprocess.run([*js, "restore"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (out / "detours.raw").exists() and (out / "trace").is_dir()
