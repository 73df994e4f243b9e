"""Per-run overhead of `doe run`: applying and undoing each built-in factor.

A DoE run's cost beyond its response is the time to set the factors' levels
through the journal (fsynced entries), start background loads until they are
running, and undo it all.  This times apply+undo for each built-in factor's
changing level, median of REPS, on this machine (needs root).  Target: each
median within what the experiment's up-front duration estimate allows for it
(the factor's setup_s plus the run's fixed 0.05 s, doe/plan.py), so the
estimate that `budget` and `--yes` are checked against does not undercount.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Bench  # noqa: E402

from jitterscope.doe.factors import Context, make  # noqa: E402
from jitterscope.journal import Journal  # noqa: E402
from jitterscope.sysinfo import online_cpus  # noqa: E402

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
    bench = Bench("doe", "## DoE (`benchmarks/bench_doe.py`)")
    bench.require(os.geteuid() == 0, "needs root (the factors change kernel settings)")
    online = online_cpus()
    ctx = Context(cpus=[online[-1]], online=online, load_seconds=60)
    rows = [
        f"Apply + undo of each factor's level on CPU {online[-1]}, median of {REPS}.",
        "",
        "| factor | level | entries | apply+undo median (ms) | min (ms) | estimate allows (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for kind, low, high, level in CASES:
        f = make("bench", kind, low, high, {})
        try:
            f.check(ctx)
        except Exception as err:  # a knob this kernel lacks
            rows.append(f"| {kind} | {level} | - | not available: {err} | - | - |")
            continue
        times, entries = [], 0
        for _ in range(REPS):
            t0 = time.perf_counter()
            with Journal("bench") as j:
                f.apply(level, j, ctx)
                entries = len(j.entries)
            times.append((time.perf_counter() - t0) * 1e3)
        med, allowed = statistics.median(times), (f.setup_s + 0.05) * 1e3
        bench.check(
            f"{kind} {level}: apply+undo within the estimate's {allowed:.0f} ms", med <= allowed, f"{med:.1f} ms"
        )
        rows.append(f"| {kind} | {level} | {entries} | {med:.1f} | {min(times):.1f} | {allowed:.0f} |")
    bench.section("\n".join(rows))
    return bench.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
