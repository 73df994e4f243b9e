"""Per-run overhead of `doe run`: applying and undoing each built-in factor.

A DoE run's cost beyond its response is the time to set the factors' levels
through the journal (fsynced entries), start background loads until they are
running, and undo it all.  This times apply+undo for each built-in factor's
changing level, median of REPS, on this machine (needs root).
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time

from jitterscope.doe.factors import Context, make
from jitterscope.journal import Journal
from jitterscope.sysinfo import cpu_model, online_cpus

REPS = int(os.environ.get("BENCH_REPS", "7"))
CASES = [
    ("timer_migration", "0", "1", "0"),
    ("thp", "always", "never", "never"),
    ("ksm", "0", "1", "1"),
    ("irq_affinity", "to", "away", "away"),
    ("task_affinity", "allowed", "away", "away"),
    ("udp_flood", "off", "on", "on"),
    ("cache_load", "resident", "thrash", "resident"),
    ("cache_load", "resident", "thrash", "thrash"),
]


def main() -> int:
    if os.geteuid() != 0:
        print("bench_doe needs root", file=sys.stderr)
        return 2
    online = online_cpus()
    ctx = Context(cpus=[online[-1]], online=online, load_seconds=60)
    print(f"Machine: {cpu_model()}, {len(online)} CPUs, Linux {platform.release()}; measured CPU {online[-1]}")
    print("| factor | level | entries | apply+undo median (ms) | min (ms) |")
    print("|---|---|---|---|---|")
    for kind, low, high, level in CASES:
        f = make("bench", kind, low, high, {})
        try:
            f.check(ctx)
        except Exception as err:  # a knob this kernel lacks
            print(f"| {kind} | {level} | - | not available: {err} | - |")
            continue
        times, entries = [], 0
        for _ in range(REPS):
            t0 = time.perf_counter()
            with Journal("bench") as j:
                f.apply(level, j, ctx)
                entries = len(j.entries)
            times.append((time.perf_counter() - t0) * 1e3)
        print(f"| {kind} | {level} | {entries} | {statistics.median(times):.1f} | {min(times):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
