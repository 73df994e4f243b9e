"""Simulate benchmarks (issue 4): order-statistic mode at N=1e9, P=1e4, R=100
(target < 2 s); trace-driven 1e5 nodes x 100 phases (target < 30 s); 2 nodes x 100
replications batched against one replication at a time (target >= 10x); speed-up
of order statistics over brute-force sampling of all N x P delays at N=1e5
(target >= 100x, same mean within its interval)."""

from __future__ import annotations

import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support: synthetic noise runs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Bench  # noqa: E402

from jitterscope.simulate import Job, parse_noise, sample_max, simulate  # noqa: E402
from tests.support.noise_runs import periodic_source, write_noise_run  # noqa: E402


def best_of(k: int, fn):
    times, out = [], None
    for _ in range(k):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> int:
    targets = Bench("simulate", "## Simulate (`benchmarks/bench_simulate.py`)")
    spec = parse_noise("normal(mean=1.91ms,sd=0.36ms)")

    # 1. order statistics at N = 1e9
    job = Job((10**9,), (10**4,), 10e-3, replications=100)
    t1, sim = best_of(3, lambda: simulate(spec, job))
    r = sim.point(10**9, 10**4)
    targets.log(
        f"order-statistic N=1e9 P=1e4 R=100: {t1:.3f} s (target < 2 s: "
        f"{targets.check('order statistics at N=1e9 under 2 s', t1 < 2)})  runtime {r.runtime_s:.3f} s, "
        f"exact {r.expected_s:.3f} s, CI [{r.ci95_s[0]:.3f}, {r.ci95_s[1]:.3f}]"
    )

    # 2. trace-driven 1e5 nodes x 100 phases, from a 10 s run with a 4 ms tick, TIMER softirq and a daemon
    with tempfile.TemporaryDirectory() as tmp:
        run = write_noise_run(
            Path(tmp) / "run",
            [
                periodic_source("irq", "local_timer", 1, 4e6, 3e3, 10e9, phase_ns=1000, jitter_ns=300, seed=1),
                periodic_source("softirq", "TIMER", 1, 8e6, 2e3, 10e9, phase_ns=5000, jitter_ns=300, seed=2),
                periodic_source("thread", "daemon", 1, 0.5e9, 300e3, 10e9, phase_ns=1.23e8, seed=3),
                periodic_source("irq", "local_timer", 2, 4e6, 3e3, 10e9, phase_ns=2000, jitter_ns=300, seed=4),
            ],
            10.0,
        )
        for phase in (1e-3, 10e-3):
            tjob = Job((10**5,), (100,), phase, replications=1)
            t2, tsim = best_of(1, lambda tjob=tjob: simulate(parse_noise(str(run)), tjob))
            what = f"trace-driven 1e5 nodes, {phase * 1e3:g} ms phases, under 30 s"
            targets.log(
                f"trace-driven 1e5 nodes x 100 phases of {phase * 1e3:g} ms (barrier, 17 rounds): {t2:.2f} s "
                f"(target < 30 s: {targets.check(what, t2 < 30)})"
                f"  slowdown {tsim.point(10**5, 100).slowdown:.3%}"
            )

        # 2b. few nodes, many replications (cluster bsp's prediction of a 2-node job): replications side
        # by side against one replication at a time, measured in this run
        from jitterscope.simulate import trace as trace_engine

        sjob = Job((2,), (300,), 5e-3, replications=100)
        batched_t, _ = best_of(3, lambda: simulate(parse_noise(str(run)), sjob))
        keep = trace_engine.BATCH_ELEMENTS
        trace_engine.BATCH_ELEMENTS = 2  # one replication per batch: the engine before batching
        try:
            single_t, _ = best_of(1, lambda: simulate(parse_noise(str(run)), sjob))
        finally:
            trace_engine.BATCH_ELEMENTS = keep
        targets.log(
            f"trace-driven 2 nodes x 300 phases x 100 replications: {batched_t:.3f} s batched, "
            f"{single_t:.2f} s one replication at a time, {single_t / batched_t:.0f}x "
            f"(target >= 10x: {targets.check('replications batched 10x', single_t / batched_t >= 10)})"
        )

    # 3. order statistics vs brute force at N = 1e5 (P = 200 phases, 5 replications)
    n, p, reps = 10**5, 200, 5
    rng = np.random.default_rng(1)

    def brute():
        tot = np.zeros(reps)
        for k in range(reps):
            for _ in range(p):
                tot[k] += rng.normal(1.91e-3, 0.36e-3, n).max()
        return tot

    def exact():
        return sample_max(spec.delay, n, rng, (p, reps)).sum(axis=0)

    tb, b = best_of(1, brute)
    te, e = best_of(5, exact)
    se = math.sqrt(b.var(ddof=1) / reps + e.var(ddof=1) / reps)
    targets.log(
        f"N=1e5 P={p} R={reps}: brute force {tb:.2f} s, order statistics {te * 1e3:.2f} ms, "
        f"speed-up {tb / te:.0f}x "
        f"(target >= 100x: {targets.check('order statistics 100x brute force', tb / te >= 100)}); "
        f"mean per phase {b.mean() / p * 1e3:.4f} vs "
        f"{e.mean() / p * 1e3:.4f} ms, difference {abs(b.mean() - e.mean()) / se:.2f} standard errors"
    )
    targets.section()
    return targets.exit_code()


if __name__ == "__main__":
    sys.exit(main())
