"""`jitterscope place` on this machine (Knauerhase et al. 2008, spec B.3): does co-running hurt cachebuster here, and
what cb throughput does each policy give?

1. Interference pre-check: jitterscope-cachebuster (24 MiB: 3/4 of a 32 MiB L3) alone on the highest CPU,
   against two copies co-running on two CPUs sharing the LLC, interleaved (3 rounds x 1.5 s): the ratio of
   line updates per second.  The paper's worst case lost 26-30%.
2. cb throughput per policy: 2 cb + 2 sl, one of each per CPU (declared weights cb = 1, sl = 0), under
   stock (the kernel, same pinning), worst ([cb,sl][cb,sl]), OBS-L and OBS-L+C, 4 s each, interleaved x2
   (place --compare); cb ops/s and ops per CPU-second (one op = 4096 line updates), every task's speedup
   vs stock as a geometric mean, and the co-running fraction.  The paper: OBS-L +30% vs stock, +73% vs worst.
3. OBS-M overhead: a pipe ping-pong without and with the observer (place.overhead).

Writes the "## Place" section of BENCHMARKS.md (benchlib.Bench).  Needs root and two CPUs.  About two
minutes.  Targets: OBS-L's heavy co-running <= 5%, and the observer's cost per switch under the paper's bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Bench  # noqa: E402

from jitterscope.native_bin import native_bin  # noqa: E402
from jitterscope.place.overhead import measure  # noqa: E402

CB = str(native_bin("jitterscope-cachebuster"))
BUF = str(24 << 20)


def _cb(cpus: list[int], seconds: float) -> list[float]:
    procs = [
        subprocess.Popen(
            [CB, "--cpu", str(c), "--buffer", BUF, "--duration-ns", str(int(seconds * 1e9))],
            stdout=subprocess.PIPE,
            text=True,
        )
        for c in cpus
    ]
    return [float(json.loads(p.communicate()[0])["lines_per_s"]) for p in procs]


def _compare(seconds: float, out: Path) -> dict:
    """The mix under each set side by side (place --compare: interleaved, per wall and per CPU second)."""
    cmd = [
        sys.executable,
        "-m",
        "jitterscope",
        "place",
        "--compare",
        "stock,worst,L,L+C",
        "--repeat",
        "2",
        "--cpus",
        "0,1",
        "--json",
        "--out",
        str(out),
        "--declare",
        "jitterscope-cachebuster=heavy",
        "--declare",
        "jitterscope-spinloop=light",
        "--cmd",
        f"jitterscope-cachebuster --buffer {BUF}",
        "--cmd",
        f"jitterscope-cachebuster --buffer {BUF}",
        "--cmd",
        "jitterscope-spinloop",
        "--cmd",
        "jitterscope-spinloop",
        "--duration",
        f"{seconds}s",
    ]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def main() -> int:
    bench = Bench("place", "## Place (`benchmarks/bench_place.py`)")
    bench.require(os.geteuid() == 0, "needs root (place stops and resumes tasks)")
    bench.require(len(os.sched_getaffinity(0)) >= 2, "needs two CPUs")
    alone, both = [], []
    for _ in range(3):
        alone += _cb([1], 1.5)
        both += _cb([0, 1], 1.5)
    ratio = np.mean(both) / np.mean(alone)
    with tempfile.TemporaryDirectory() as tmp:
        s = _compare(4.0, Path(tmp) / "cmp")
    ov = measure(repeats=3)
    bench.log(
        f"cachebuster alone {np.mean(alone) / 1e6:.2f} M lines/s, two co-running {np.mean(both) / 1e6:.2f} M "
        f"lines/s each: x{ratio:.3f} ({(ratio - 1) * 100:+.1f}%; paper's worst case: -26 to -30%)\n"
    )
    bench.log(
        "| policy | cb ops/s | cb ops/CPU-s | all tasks vs stock, per wall s (gmean, min..max) | per CPU s | "
        "heavy co-running |"
    )
    bench.log("|---|---|---|---|---|---|")
    cbs = [t for t in s["tasks"] if t["name"] == "jitterscope-cachebuster"]
    for pol, v in s["policies"].items():
        w, c = v["speedup_wall"], v["speedup_cpu"]
        bench.log(
            f"| {pol} | {np.mean([t['by_policy'][pol]['ops_per_s'] for t in cbs]):,.0f} | "
            f"{np.mean([t['by_policy'][pol]['ops_per_cpu_s'] for t in cbs]):,.0f} | x{w['gmean']:.3f} "
            f"({w['min']:.3f}..{w['max']:.3f}) | x{c['gmean']:.3f} ({c['min']:.3f}..{c['max']:.3f}) | "
            f"{v['coheavy_fraction']:.1%} |"
        )
    bench.log(f"\n{ov['text']}")
    coheavy = s["policies"]["L"]["coheavy_fraction"]
    bench.check(
        "OBS-L keeps the heavy tasks apart: heavy co-running <= 5% of the time",
        coheavy <= 0.05,
        f"{coheavy:.1%}; worst mapping {s['policies']['worst']['coheavy_fraction']:.1%}",
    )
    amortised, bound = ov["amortised_ns_per_switch"], ov["paper_bound_ns_at_2_6ghz"]
    bench.check(
        "observer cost amortised per context switch < the paper's 1,000 cycles (385 ns at 2.6 GHz)",
        amortised < bound,
        f"{amortised:.0f} ns",
    )
    bench.section()
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())
