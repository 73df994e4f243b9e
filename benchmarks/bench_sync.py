"""Benchmark of `jitterscope sync`: interposer cost per uncontended lock/unlock pair, slowdown of real
programs (xz -T2, zstd -T2, pigz -p 2) under the interposer, records per second the writer keeps up with.

Ratios are measured side by side in one run (bare and interposed alternate), medians of REPEATS.
Run: .venv/bin/python benchmarks/bench_sync.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "tests/integration/sync_programs/syncgold.c"
LIB = ROOT / "src/jitterscope/native/bin/libjssync.so"
REPEATS = 7


def env(on: bool, raw: str) -> dict[str, str]:
    e = dict(os.environ)
    if on:
        e.update(LD_PRELOAD=str(LIB), JS_SYNC_DIR=raw)
    return e


def uncontended(prog: str, raw: str) -> None:
    bare, inter = [], []
    for _ in range(REPEATS):
        for on, out in ((False, bare), (True, inter)):
            p = subprocess.run([prog, "uncontended", "20000000"], env=env(on, raw), capture_output=True, text=True)
            out.append(float(p.stdout))
    b, i = statistics.median(bare), statistics.median(inter)
    print(f"uncontended lock+unlock pair: bare {b:.2f} ns, interposed {i:.2f} ns (+{i - b:.2f} ns, x{i / b:.2f})")


def real(prog: list[str], out_ext: str, data: Path, raw: str) -> None:
    if not shutil.which(prog[0]):
        print(f"{prog[0]}: not installed (make sync-programs)")
        return
    t = {False: [], True: []}
    for _ in range(REPEATS):
        for on in (False, True):
            a = time.perf_counter()
            subprocess.run([*prog, str(data)], env=env(on, raw), check=True)
            t[on].append(time.perf_counter() - a)
            Path(str(data) + out_ext).unlink()
    b, i = statistics.median(t[False]), statistics.median(t[True])
    print(f"{' '.join(prog)}: bare {b * 1e3:.0f} ms, interposed {i * 1e3:.0f} ms (slowdown {100 * (i / b - 1):+.1f}%)")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        prog = f"{tmp}/syncgold"
        subprocess.run(["cc", "-O2", "-pthread", "-o", prog, str(SRC)], check=True)
        raw = f"{tmp}/raw"
        os.mkdir(raw)
        uncontended(prog, raw)
        data = Path(tmp) / "data.bin"
        data.write_bytes((os.urandom(1 << 20) + bytes(range(256)) * 4096) * 16)   # 33.5 MB
        real(["xz", "-T2", "-k", "-f", "-3"], ".xz", data, raw)
        real(["zstd", "-T2", "-k", "-f", "-q", "-3"], ".zst", data, raw)
        real(["pigz", "-p", "2", "-k", "-f"], ".gz", data, raw)
        from jitterscope.sync.records import read_logs

        n = sum(len(lg.records) for lg in read_logs(Path(raw)))
        d = sum(int(lg.header["dropped"]) for lg in read_logs(Path(raw)))
        print(f"records written in all runs: {n}, dropped: {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
