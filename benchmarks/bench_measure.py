"""Noise measured with tracing / without tracing, interleaved runs (target <= 1.05).

Tracing must not create the noise it explains.  Runs alternate traced and
untraced measurements of the same CPU so slow drifts of a shared machine hit
both alike; the ratio of total noise (sum over runs) is reported.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from jitterscope.measure_core import measure
from jitterscope.rundir import load_run
from jitterscope.sysinfo import online_cpus

PAIRS = int(os.environ.get("BENCH_PAIRS", "5"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "3"))


def main() -> int:
    cpu = online_cpus()[-1]
    noise = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(PAIRS):
            for traced in ((True, False) if i % 2 == 0 else (False, True)):
                d = measure([cpu], SECONDS * 1e9, 1000.0, Path(tmp) / f"r{i}-{traced}", trace=traced)
                s = load_run(d).summary
                noise[traced].append(s["cpus"][str(cpu)]["noise_ppm"])
    with_t, without = sum(noise[True]), sum(noise[False])
    print(f"CPU {cpu}, {PAIRS} interleaved pairs of {SECONDS:g} s")
    print(f"noise ppm with tracing:    {', '.join(f'{x:.0f}' for x in noise[True])}")
    print(f"noise ppm without tracing: {', '.join(f'{x:.0f}' for x in noise[False])}")
    ratio = with_t / without if without else float("inf")
    print(f"ratio traced/untraced: {ratio:.3f} (target <= 1.05)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
