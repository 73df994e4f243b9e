"""Background loads started by DoE factors, each a process group of its own.

Run as `python -m jitterscope.doe.loads {cache,udp} ...` by `start_load`.  The
start protocol makes the load safe to journal: the child sets itself up, then
blocks reading stdin; the parent journals its process group and only then
writes "go".  If the parent dies before that, stdin hits EOF and the child
exits without ever loading the machine.  Every load also has a hard deadline
and dies with its parent (PR_SET_PDEATHSIG), so it stops by itself even if
nothing ever kills it; `jitterscope restore` kills the group too.

cache: a CPU-bound random gather over a working set, either larger than the
  last-level cache (every access misses and evicts the measured CPU's lines:
  Vicente & Matias's experiment 2) or small enough to stay in the load CPU's L2.
udp:   a receiver pinned to one CPU and a sender flooding it with fixed-size
  datagrams over 127.0.0.1 only, at a bounded rate (Vicente & Matias's experiment 3
  used 500-byte datagrams).
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from jitterscope import childgroup
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal

MAX_UDP_RATE = 500_000  # datagrams/s: a ceiling so a typo cannot saturate the machine
MAX_LIFETIME_S = 3600.0


def _wait_go() -> bool:
    print("armed", flush=True)
    return sys.stdin.readline().strip() == "go"


def _cache(args: argparse.Namespace) -> int:
    import numpy as np

    os.sched_setaffinity(0, {args.cpu})
    deadline = time.monotonic() + args.seconds
    if not _wait_go():
        return 0
    n = max(1024, args.bytes // 8)
    a = np.ones(n)  # touching every page makes the whole set resident before we say ready
    rng = np.random.default_rng(0)
    idx = rng.integers(0, n, size=min(n, 1 << 20))
    print("ready", flush=True)
    s = 0.0
    while time.monotonic() < deadline:
        s += float(a[idx].sum())
    return 0 if s >= 0 else 1


def _udp(args: argparse.Namespace) -> int:
    os.sched_setaffinity(0, {args.cpu})
    deadline = time.monotonic() + args.seconds
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))  # loopback only, by construction
    port = rx.getsockname()[1]
    if not _wait_go():
        return 0
    child = os.fork()
    if child == 0:  # the sender, in the same process group
        try:
            childgroup.die_with_parent()
            os.sched_setaffinity(0, {args.sender_cpu})
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            payload = b"\0" * args.payload
            rate = min(args.rate, MAX_UDP_RATE)
            batch = max(1, rate // 1000)  # send in 1 ms batches, then sleep to hold the rate
            t0 = time.monotonic()
            sent = 0
            while True:
                now = time.monotonic()
                if now >= deadline:
                    break
                ahead = sent / rate - (now - t0)
                if ahead > 0:
                    time.sleep(ahead)
                for _ in range(batch):
                    try:
                        tx.sendto(payload, ("127.0.0.1", port))
                    except OSError:
                        pass  # a full receive buffer drops datagrams; that is load too
                sent += batch
        finally:
            os._exit(0)
    print("ready", flush=True)
    rx.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            rx.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            break
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jitterscope.doe.loads")
    sub = p.add_subparsers(dest="kind", required=True)
    c = sub.add_parser("cache")
    c.add_argument("--cpu", type=int, required=True)
    c.add_argument("--bytes", type=int, required=True)
    c.add_argument("--seconds", type=float, required=True)
    u = sub.add_parser("udp")
    u.add_argument("--cpu", type=int, required=True, help="receiver CPU")
    u.add_argument("--sender-cpu", type=int, required=True)
    u.add_argument("--rate", type=int, required=True)
    u.add_argument("--payload", type=int, default=500)
    u.add_argument("--seconds", type=float, required=True)
    args = p.parse_args(argv)
    args.seconds = min(args.seconds, MAX_LIFETIME_S)
    childgroup.die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner's Ctrl-C is for the runner; it kills us
    return _cache(args) if args.kind == "cache" else _udp(args)


def start_load(journal: Journal, argv: list[str], timeout: float = 30.0) -> subprocess.Popen:
    """Start a load in its own process group, journal the group, then let it run.

    Returns once the load reports it is running (its working set touched, its
    sockets open), so the response never sees a load that is still starting.
    """
    proc = childgroup.popen(
        [sys.executable, "-m", "jitterscope.doe.loads", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin and proc.stdout
    if _readline(proc, timeout) != "armed":
        proc.kill()
        proc.wait()
        raise JitterscopeError(f"background load {argv[0]} failed to start")
    journal.process_group(proc.pid)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    if _readline(proc, timeout) != "ready":
        raise JitterscopeError(f"background load {argv[0]} did not start running within {timeout:.0f} s")
    return proc


def _readline(proc: subprocess.Popen, timeout: float) -> str:
    assert proc.stdout
    r, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline().strip() if r else ""


def llc_bytes(cpu: int) -> int | None:
    """Size of the highest-level cache of `cpu` from sysfs (None if not reported)."""
    best: tuple[int, int] | None = None
    for d in Path(f"/sys/devices/system/cpu/cpu{cpu}/cache").glob("index*"):
        try:
            level = int((d / "level").read_text())
            if (d / "type").read_text().strip() == "Instruction":
                continue
            size = _size((d / "size").read_text().strip())
        except (OSError, ValueError):
            continue
        if best is None or level > best[0]:
            best = (level, size)
    return best[1] if best else None


def l2_bytes(cpu: int) -> int | None:
    for d in Path(f"/sys/devices/system/cpu/cpu{cpu}/cache").glob("index*"):
        try:
            if int((d / "level").read_text()) == 2 and (d / "type").read_text().strip() != "Instruction":
                return _size((d / "size").read_text().strip())
        except (OSError, ValueError):
            continue
    return None


def _size(text: str) -> int:
    mult = {"K": 1024, "M": 1024**2, "G": 1024**3}
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
