"""Benchmark of `jitterscope sync`: interposer cost per uncontended lock/unlock pair, slowdown of real
programs (xz -T2, zstd -T2, pigz -p 2) under the interposer, records per second the writer keeps up with
(`storm`: pairs of threads ping-ponging through a condvar, every operation contended, so every one is a record).

Ratios are measured side by side in one run (bare and interposed alternate), medians of REPEATS, of the
wall time and of the program's CPU time (user + sys): on a shared, loaded machine one run's wall time
varies by tens of percent, its CPU time far less.
Targets: the interposer costs real programs (xz, pigz) <= 5% of their CPU time (median ratio, side by side).
zstd's runs (~0.1 s) are reported, not judged: the interposer's start-up and final drain are fixed costs.
Run: .venv/bin/python benchmarks/bench_sync.py [--write]
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from benchlib import Bench  # noqa: E402

BENCH = Bench("sync", "## Sync interposer (`benchmarks/bench_sync.py`)")
TOOLS = ("cc", "xz", "zstd", "pigz")
SRC = ROOT / "tests/integration/sync_programs/syncgold.c"
LIB = ROOT / "src/jitterscope/native/bin/libjssync.so"
REPEATS = int(os.environ.get("BENCH_REPEATS", "9"))
STORM = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
struct pair { pthread_mutex_t m; pthread_cond_t c; int turn; long n; };
static void *side(void *arg) {
    struct pair *p = (struct pair *)((char *)arg - ((long)arg & 1));
    int me = (int)((long)arg & 1);
    for (long i = 0; i < p->n; i++) {
        pthread_mutex_lock(&p->m);
        while (p->turn != me) pthread_cond_wait(&p->c, &p->m);
        p->turn = !me;
        pthread_cond_signal(&p->c);
        pthread_mutex_unlock(&p->m);
    }
    return NULL;
}
int main(int argc, char **argv) {
    int pairs = atoi(argv[1]); long n = atol(argv[2]);
    struct pair *ps = aligned_alloc(64, sizeof(struct pair) * 64);
    pthread_t t[128];
    for (int i = 0; i < pairs; i++) {
        pthread_mutex_init(&ps[i].m, NULL); pthread_cond_init(&ps[i].c, NULL); ps[i].turn = 0; ps[i].n = n;
        for (int k = 0; k < 2; k++) pthread_create(&t[2 * i + k], NULL, side, (char *)&ps[i] + k);
    }
    for (int i = 0; i < 2 * pairs; i++) pthread_join(t[i], NULL);
    return 0;
}
"""


def env(on: bool, raw: str, sleep_check: bool = True) -> dict[str, str]:
    e = dict(os.environ)
    if on:
        e.update(LD_PRELOAD=str(LIB), JS_SYNC_DIR=raw)
        if not sleep_check:
            e["JS_SYNC_SLEEP_CHECK"] = "0"
    return e


def uncontended(prog: str, raw: str) -> None:
    bare, inter = [], []
    for _ in range(REPEATS):
        for on, out in ((False, bare), (True, inter)):
            p = subprocess.run([prog, "uncontended", "20000000"], env=env(on, raw), capture_output=True, text=True)
            out.append(float(p.stdout))
    b, i = statistics.median(bare), statistics.median(inter)
    BENCH.log(f"uncontended lock+unlock pair: bare {b:.2f} ns, interposed {i:.2f} ns (+{i - b:.2f} ns, x{i / b:.2f})")


def _timed(cmd: list[str], e: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s = user + sys of the child): on a shared machine the wall time of one run varies
    by tens of %, its CPU time far less, so both are reported."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    a = time.perf_counter()
    subprocess.run(cmd, env=e, check=True)
    wall = time.perf_counter() - a
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)


def real(prog: list[str], out_ext: str, data: Path, raw: str, variants: tuple[str, ...] = ("on",)) -> float:
    """Bare and interposed runs alternate (side by side, one process); medians and ratios of wall and CPU.
    Returns the CPU-time ratio interposed / bare."""
    modes = {"bare": env(False, raw), "on": env(True, raw), "on, JS_SYNC_SLEEP_CHECK=0": env(True, raw, False)}
    modes = {k: v for k, v in modes.items() if k == "bare" or k in variants}
    t: dict[str, list[tuple[float, float]]] = {k: [] for k in modes}
    for _ in range(REPEATS):
        for k, e in modes.items():
            t[k].append(_timed([*prog, str(data)], e))
            Path(str(data) + out_ext).unlink()
    wall0 = statistics.median(w for w, _ in t["bare"])
    cpu0 = statistics.median(c for _, c in t["bare"])
    for k, v in t.items():
        w, c = statistics.median(x for x, _ in v), statistics.median(y for _, y in v)
        spread = f"{min(x for x, _ in v) * 1e3:.0f}..{max(x for x, _ in v) * 1e3:.0f}"
        BENCH.log(
            f"{' '.join(prog)} [{k}]: wall {w * 1e3:.0f} ms ({spread}) x{w / wall0:.3f}, "
            f"CPU {c * 1e3:.0f} ms x{c / cpu0:.3f}"
        )
    return statistics.median(y for _, y in t["on"]) / cpu0


def storm(tmp: str) -> None:
    """Records per second of wall time the writer drained with none dropped (default ring, 10 ms period):
    a lower bound of what it sustains, at the rate 1, 2, 4 ping-pong pairs produce on this machine."""
    src, prog = Path(tmp) / "storm.c", f"{tmp}/storm"
    src.write_text(STORM)
    subprocess.run(["cc", "-O2", "-pthread", "-o", prog, str(src)], check=True)
    from jitterscope.sync.records import read_logs

    for pairs in (1, 2, 4):
        raw = Path(tmp) / f"storm{pairs}"
        raw.mkdir()
        a = time.perf_counter()
        subprocess.run([prog, str(pairs), "100000"], env=env(True, str(raw)), check=True)
        wall = time.perf_counter() - a
        logs = read_logs(raw)
        n = sum(len(lg.records) for lg in logs)
        d = sum(int(lg.header["dropped"]) for lg in logs)
        BENCH.log(
            f"storm {pairs} pair(s): {n:,} records in {wall:.2f} s = {n / wall:,.0f} records/s written, "
            f"{d:,} dropped ({d / max(n + d, 1):.2%})"
        )


def main() -> int:
    missing = [t for t in TOOLS if not shutil.which(t)]
    BENCH.require(not missing, f"{', '.join(missing)} not installed (make packages)")
    with tempfile.TemporaryDirectory() as tmp:
        prog = f"{tmp}/syncgold"
        subprocess.run(["cc", "-O2", "-pthread", "-o", prog, str(SRC)], check=True)
        raw = f"{tmp}/raw"
        os.mkdir(raw)
        uncontended(prog, raw)
        storm(tmp)
        data = Path(tmp) / "data.bin"
        data.write_bytes((os.urandom(1 << 20) + bytes(range(256)) * 4096) * 16)  # 33.5 MB
        xz = real(["xz", "-T2", "-k", "-f", "-3"], ".xz", data, raw, ("on", "on, JS_SYNC_SLEEP_CHECK=0"))
        real(["zstd", "-T2", "-k", "-f", "-q", "-3"], ".zst", data, raw)
        pigz = real(["pigz", "-p", "2", "-k", "-f"], ".gz", data, raw)
        BENCH.check("xz -T2 under the interposer: CPU time <= x1.05", xz <= 1.05, f"x{xz:.3f}")
        BENCH.check("pigz -p 2 under the interposer: CPU time <= x1.05", pigz <= 1.05, f"x{pigz:.3f}")
        from jitterscope.sync.records import read_logs

        n = sum(len(lg.records) for lg in read_logs(Path(raw)))
        d = sum(int(lg.header["dropped"]) for lg in read_logs(Path(raw)))
        BENCH.log(f"records written in all runs: {n}, dropped: {d}")
    BENCH.section()
    return BENCH.exit_code()


if __name__ == "__main__":
    sys.exit(main())
