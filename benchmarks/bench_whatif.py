"""whatif: the cache simulator on a 100-million-access trace (target: under a minute here, issue 16), its
speed against the brute-force reference side by side, and the DVFS replay of 60 s two-thread programs
(target: seconds), native pass 1 against the pure-Python reference side by side (identical results), and the
capture: `whatif capture` of a small xz run against the bare run, and lackey's text parsed chunk-wise with numpy
against the line-by-line reader, side by side on the same log."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT))
from benchlib import Bench  # noqa: E402

from jitterscope.whatif import cachesim as CS  # noqa: E402
from jitterscope.whatif import dvfs as D  # noqa: E402
from jitterscope.whatif import kernel as K  # noqa: E402
from jitterscope.whatif import lackey  # noqa: E402
from jitterscope.whatif import replay as R  # noqa: E402
from jitterscope.whatif.controller import Controller  # noqa: E402
from jitterscope.whatif.dvfs import DvfsOptions, dvfs  # noqa: E402
from jitterscope.whatif.program import Program, Segment, Thread, Wait  # noqa: E402
from tests.support import dvfs_ref  # noqa: E402
from tests.support.cachesim_ref import RefSim  # noqa: E402

N = 100_000_000
CACHE_TARGET_S = 60.0
DVFS_TARGET_S = 10.0
CFG = dict(
    l1_sets=512,
    l1_ways=2,
    l1_line_shift=5,
    l2_sets=1024,
    l2_ways=4,
    os_sets=256,
    os_ways=4,
    overflow=1,
    flush=1,
    migrate_back=1,
    prefetch_lines=0,
    pin=0,
    pin_pct=95,
    prefetch_pct=90,
    active_mult=256,
    ema_shift=3,
)


def trace(n: int) -> np.ndarray:
    """A program sweeping 4 MiB in 8-byte strides with a hot 16 KiB region every 4th access; 1 in 3 stores."""
    i = np.arange(n, dtype=np.uint64)
    addr = np.where(
        i % np.uint64(4) == 0, (i * np.uint64(40)) % np.uint64(16384), (i * np.uint64(8)) % np.uint64(4 << 20)
    )
    return (addr << np.uint64(2)) | (i % np.uint64(3) == 0).astype(np.uint64)


def cache_bench() -> tuple[float, float, float]:
    words = trace(N)
    tl = K.synthetic(2000.0, 20_000.0)
    b, srcs = K.bursts(tl, N, 1.0, 48 << 10)
    t = time.perf_counter()
    r = CS.run(CS.Config(**CFG), words, b, srcs)
    native_s = time.perf_counter() - t
    assert r["accesses_app"] == N
    small = words[:20_000]
    bs, _ = K.bursts(tl, len(small), 1.0, 48 << 10)
    t = time.perf_counter()
    CS.run(CS.Config(**CFG), small, bs, srcs)
    n_small = time.perf_counter() - t
    t = time.perf_counter()
    RefSim(CFG, srcs).run([int(x) for x in small], list(zip(bs.pos.tolist(), bs.src.tolist(), bs.length.tolist())))
    ref_small = time.perf_counter() - t
    return native_s, ref_small / max(n_small, 1e-9), r["bursts"]


def program(seconds: float) -> Program:
    """Two threads computing `seconds` each, losing 50 us every ms (spread), worker joined by main."""
    threads = {}
    for tid in (1, 2):
        end = int(seconds * 1e9)
        lost = [(int(t), int(t + 50_000)) for t in np.arange(1e6 * tid / 3, end - 1e6, 1e6)]
        threads[tid] = Thread(tid, 0 if tid == 1 else 1, None if tid == 1 else 0, 0, end, [Segment(0, end, lost)])
    return Program(threads, sum(e - s for th in threads.values() for s, e in th.items[0].lost), 0, int(seconds * 1e9))


def barrier_program(seconds: float, period_ns: int = 2_000_000) -> Program:
    """Two threads meeting at a barrier every 2 ms (30,000 rounds in 60 s), each round's compute losing
    a 40 us span and, one round in five, a 100 us late wake-up."""
    items: dict[int, list[Segment | Wait]] = {1: [], 2: []}
    for r, t in enumerate(range(0, int(seconds * 1e9), period_ns)):
        for tid in (1, 2):
            end = t + period_ns - 50_000 * tid
            items[tid].append(Segment(t, end, [(t + 300_000 * tid, t + 300_000 * tid + 40_000)]))
            items[tid].append(
                Wait(
                    2 * r + tid,
                    "barrier",
                    1,
                    end,
                    t + period_ns,
                    t + period_ns - 50_000,
                    1,
                    100_000 if (r + tid) % 5 == 0 else 0,
                )
            )
    threads = {tid: Thread(tid, 0, None, 0, int(seconds * 1e9), its) for tid, its in items.items()}
    return Program(threads, 0, 0, int(seconds * 1e9))


def _ref_plans(prog: Program, mode: R.Mode, ops: object = None) -> dict[int, R._Plan]:
    """The pure-Python pass 1 (tests/support/dvfs_ref.py) in the native pass's result type."""
    out = {}
    for tid, p in dvfs_ref.plan_all(prog, mode).items():
        s = np.array(p.subs, dtype=float).reshape(-1, 5)
        out[tid] = R._Plan(
            p.maps, s[:, 0].astype(np.int64), s[:, 1], s[:, 2], s[:, 3], s[:, 4], p.end_j, p.busy, p.energy
        )
    return out


def dvfs_bench(prog: Program) -> tuple[float, float, float, dict]:
    """CPU seconds (the machine is shared) of the five replays, native then reference, and wall of native."""
    t, c = time.perf_counter(), time.process_time()
    res, _ = dvfs(prog, DvfsOptions(Controller()), want_trace=False)
    wall, native = time.perf_counter() - t, time.process_time() - c
    D.plan_all = _ref_plans  # type: ignore[assignment]
    try:
        c = time.process_time()
        ref, _ = dvfs(prog, DvfsOptions(Controller()), want_trace=False)
        python = time.process_time() - c
    finally:
        D.plan_all = R.plan_all
    assert ref == res, "native and reference replays differ"
    return native, wall, python, res


def capture_bench() -> str:
    """Rows for the capture: lackey + our reader on `xz -0` of 20 KB against the bare run (wall, this load), and
    the parser alone, numpy chunks vs line by line, on the same 2-million-line log (CPU seconds)."""
    rows = []
    if shutil.which("valgrind") and shutil.which("xz"):
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "d.txt"
            data.write_bytes(os.urandom(10_000).hex().encode())
            cmd = ["xz", "-0", "-k", "-f", "-c", str(data)]
            t = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
            bare = time.perf_counter() - t
            t = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "jitterscope", "whatif", "capture", "--out", f"{tmp}/t.npy", "--", *cmd],
                stdout=subprocess.DEVNULL,
                check=True,
            )
            cap = time.perf_counter() - t
            info = json.loads(Path(f"{tmp}/t.npy.json").read_text())
        rows.append(
            f"| `whatif capture` of `xz -0` on 20 KB: {info['recorded']:,} lackey lines "
            f"({info['accesses']:,} data accesses), wall | {cap:.1f} s "
            f"({info['recorded'] / cap / 1e6:.2f} M lines/s; bare run "
            f"{bare * 1e3:.0f} ms: x{cap / bare:,.0f}) | - |"
        )
    rng = np.random.default_rng(3)
    n = 2_000_000
    addr = rng.integers(1 << 12, 1 << 40, n)
    ops = rng.choice(np.array([b"I  ", b" L ", b" S ", b" M "]), n)
    log = b"".join(o + f"{a:x},8\n".encode() for o, a in zip(ops.tolist(), addr.tolist()))
    c = time.process_time()
    fast, _, _ = lackey.parse(io.BytesIO(log), True, 1 << 40)
    fast_s = time.process_time() - c
    c = time.process_time()
    slow, _, _ = lackey._slow(log.split(b"\n"))
    slow_s = time.process_time() - c
    assert fast.tolist() == slow
    rows.append(
        f"| lackey text -> words, 2,000,000 lines ({len(log) / 1e6:.0f} MB): numpy chunks vs line by line, "
        f"CPU | "
        f"{fast_s:.2f} s vs {slow_s:.2f} s ({n / fast_s / 1e6:.1f} vs {n / slow_s / 1e6:.1f} M lines/s) | - |"
    )
    return "\n".join(rows)


def main() -> int:
    bench = Bench("whatif", "## whatif (`benchmarks/bench_whatif.py`)")
    native_s, ratio, bursts = cache_bench()
    dvfs_s, dvfs_wall, py_s, res = dvfs_bench(program(60.0))
    bar_s, bar_wall, bar_py, _ = dvfs_bench(barrier_program(60.0))
    bench.check(
        f"cache simulator, {N:,} accesses < {CACHE_TARGET_S:.0f} s", native_s < CACHE_TARGET_S, f"{native_s:.1f} s"
    )
    bench.check(
        f"DVFS replay of 60 s, two threads < {DVFS_TARGET_S:.0f} s CPU", dvfs_s < DVFS_TARGET_S, f"{dvfs_s:.1f} s"
    )
    bench.check(
        f"DVFS replay of 60 s at a barrier < {DVFS_TARGET_S:.0f} s CPU", bar_s < DVFS_TARGET_S, f"{bar_s:.1f} s"
    )
    body = f"""| what | figure | target |
|---|---|---|
| cache simulator, {N:,} program accesses + {bursts:,} kernel bursts (L1 + L2 + OS cache, overflow, flush) | {native_s:.1f} s | < {CACHE_TARGET_S:.0f} s |
| native vs brute-force reference, same 20,000-access trace, side by side | {ratio:,.0f}x faster | - |
| DVFS replay of a 60 s two-thread program (ideal, recorded, k = 1, 2, 4), CPU time (wall) | {dvfs_s:.1f} s ({dvfs_wall:.1f} s) | < {DVFS_TARGET_S:.0f} s CPU |
| same, pure-Python pass 1 (tests/support/dvfs_ref.py) side by side, identical result | {py_s:.1f} s CPU: native {py_s / dvfs_s:.1f}x faster | - |
| DVFS replay of 60 s of 2 threads meeting at a barrier every 2 ms (60,000 segments), CPU (wall) | {bar_s:.1f} s ({bar_wall:.1f} s) | < {DVFS_TARGET_S:.0f} s CPU |
| same, pure-Python pass 1 side by side, identical result | {bar_py:.1f} s CPU: native {bar_py / bar_s:.1f}x faster | - |
| of which the replay's k = 1 normalized time / removed share | {res["by_k"][0]["normalized"]:.3f} / {res["by_k"][0]["removed"]:.0%} | - |
{capture_bench()}
"""  # noqa: E501
    bench.section(body)
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())
