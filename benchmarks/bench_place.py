"""`jitterscope place` on this machine (seed 002, spec B.3): does co-running hurt cachebuster here, and
what cb throughput does each policy give?

1. Interference pre-check: jitterscope-cachebuster (24 MiB: 3/4 of a 32 MiB L3) alone on the highest CPU,
   against two copies co-running on two CPUs sharing the LLC, interleaved (3 rounds x 1.5 s): the ratio of
   line updates per second.  The paper's worst case lost 26-30%.
2. cb throughput per policy: 2 cb + 2 sl, one of each per CPU (declared weights cb = 1, sl = 0), under
   stock (the kernel, same pinning), worst ([cb,sl][cb,sl]) and OBS-L, 4 s each, interleaved x2; cb ops/s
   (one op = 4096 line updates) and the co-running fraction.  The paper: OBS-L +30% vs stock, +73% vs worst.
3. OBS-M overhead: a pipe ping-pong without and with the observer (place.overhead).

Prints the "## Place" section for BENCHMARKS.md.  Needs root and two CPUs.  About two minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from jitterscope.native_bin import native_bin
from jitterscope.place.overhead import measure

CB = str(native_bin("jitterscope-cachebuster"))
BUF = str(24 << 20)


def _cb(cpus: list[int], seconds: float) -> list[float]:
    procs = [subprocess.Popen([CB, "--cpu", str(c), "--buffer", BUF, "--duration-ns", str(int(seconds * 1e9))],
                              stdout=subprocess.PIPE, text=True) for c in cpus]
    return [float(json.loads(p.communicate()[0])["lines_per_s"]) for p in procs]


def _policy(pol: str, seconds: float, out: Path) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "jitterscope", "place", "--policy", pol, "--cpus", "0,1", "--json", "--out",
           str(out), "--declare", "jitterscope-cachebuster=heavy", "--declare", "jitterscope-spinloop=light",
           "--cmd", f"jitterscope-cachebuster --buffer {BUF}", "--cmd", f"jitterscope-cachebuster --buffer {BUF}",
           "--cmd", "jitterscope-spinloop", "--cmd", "jitterscope-spinloop", "--duration", f"{seconds}s"]
    s = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    cb = [t["ops_per_s"] for t in s["tasks"] if t["name"] == "jitterscope-cachebuster"]
    return float(np.mean(cb)), float(s["coheavy_fraction"])


def main() -> int:
    if os.geteuid() != 0 or len(os.sched_getaffinity(0)) < 2:
        print("bench_place: needs root and two CPUs", file=sys.stderr)
        return 0
    alone, both = [], []
    for _ in range(3):
        alone += _cb([1], 1.5)
        both += _cb([0, 1], 1.5)
    ratio = np.mean(both) / np.mean(alone)
    res: dict[str, list[tuple[float, float]]] = {"stock": [], "worst": [], "L": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(2):
            for pol in res:
                res[pol].append(_policy(pol, 4.0, Path(tmp) / f"{pol}-{rep}"))
    ov = measure(repeats=3)
    print("## Place\n")
    print(f"cachebuster alone {np.mean(alone) / 1e6:.2f} M lines/s, two co-running {np.mean(both) / 1e6:.2f} M "
          f"lines/s each: x{ratio:.3f} ({(ratio - 1) * 100:+.1f}%; paper's worst case: -26 to -30%)\n")
    print("| policy | cb ops/s (mean of 2 runs) | vs stock | heavy co-running |")
    print("|---|---|---|---|")
    base = np.mean([x[0] for x in res["stock"]])
    for pol, xs in res.items():
        m = np.mean([x[0] for x in xs])
        print(f"| {pol} | {m:,.0f} | x{m / base:.3f} | {np.mean([x[1] for x in xs]):.1%} |")
    print(f"\n{ov['text']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
