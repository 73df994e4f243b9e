"""A CPU hog for checking that the suite passes on a busy machine: one process per online CPU, pinned to it,
at nice 0, busy for `duty` of every period and asleep for the rest, until it is killed or its duration ends.

    python -m tests.support.cpuhog --duty 0.5 &     # then: make test; kill %1

CI hosts are shared and a user's machine is never idle: the README's suite times are taken with and
without this running."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time


def _hog(cpu: int, duty: float, period: float, until: float) -> None:
    os.sched_setaffinity(0, {cpu})
    while time.monotonic() < until:
        start = time.monotonic()
        while time.monotonic() - start < duty * period:
            pass
        time.sleep(max(0.0, period - (time.monotonic() - start)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duty", type=float, default=0.5, help="busy fraction of each period (default 0.5)")
    ap.add_argument("--period", type=float, default=0.1, help="seconds (default 0.1)")
    ap.add_argument("--duration", type=float, default=3600.0, help="seconds before it stops by itself")
    a = ap.parse_args(argv)
    if not 0 < a.duty <= 1:
        ap.error("--duty must be in (0, 1]")
    until = time.monotonic() + a.duration
    children = []
    for cpu in sorted(os.sched_getaffinity(0)):
        pid = os.fork()
        if pid == 0:
            try:
                _hog(cpu, a.duty, a.period, until)
            finally:
                os._exit(0)
        children.append(pid)

    def stop(*_: object) -> None:
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, lambda *_: (stop(), sys.exit(0)))
    signal.signal(signal.SIGINT, lambda *_: (stop(), sys.exit(0)))
    for pid in children:
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
