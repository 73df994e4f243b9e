"""A reproducible burst of kernel events for tests and benchmarks of tracing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_PINGPONG = """
import os, time
os.sched_setaffinity(0, {{{cpu}}})
a, b = os.pipe(); c, d = os.pipe()
end = time.monotonic() + {seconds}
if os.fork() == 0:
    os.close(b); os.close(c)  # so the parent's close is an EOF here
    while True:
        if not os.read(a, 1): os._exit(0)
        os.write(d, b"x")
os.close(a); os.close(d)
while time.monotonic() < end:
    for _ in range(200):
        os.write(b, b"x"); os.read(c, 1)
os.close(b)
os.wait()
"""


def switch_storm(cpu: int, seconds: float) -> subprocess.Popen:
    """Two processes on `cpu` ping-ponging a byte: a context switch every few µs.

    Returns the parent; wait() on it returns once both processes have exited.
    """
    code = textwrap.dedent(_PINGPONG.format(cpu=int(cpu), seconds=float(seconds)))
    return subprocess.Popen([sys.executable, "-c", code])
