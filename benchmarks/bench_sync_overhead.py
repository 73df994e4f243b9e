"""Benchmark of what `jitterscope sync -- CMD` costs on top of CMD, end to end: the wall time of
`jitterscope sync -- pigz -p2 -c DATA` (trace on, report on: the defaults) over the wall time of the bare
`pigz -p2 -c DATA`, for data sized so the bare run takes at least 10 s.

Bare and sync runs alternate in interleaved pairs (bare first in even pairs, sync first in odd ones), so the
machine's load (it is shared) falls on both members of a pair alike.  The load of a shared machine slows
everything by a factor that changes from minute to minute (x1 to x5 here), so the figure is the geometric
mean over the pairs of sync / bare (the factor cancels within a pair), with a 95% bootstrap confidence
interval (scipy.stats.bootstrap, BCa, over the pairs' log ratios); the ratio of mean wall times is printed
beside it.  Each sync run's summary.json says where jitterscope's own time went (`overhead`: start-up
before CMD, analysis after it, the report); their medians are printed beside the ratio.
Target: the upper end of the CI of the geometric mean sync / bare <= 1.2 (issue 24: a program of 10 s or more).
Settings: BENCH_SYNC_PAIRS (default 6), BENCH_SYNC_MIN_S (bare run at least this long, default 10),
BENCH_SYNC_BASELINE (another jitterscope executable, e.g. main's, run as a third member of each pair).
Run: .venv/bin/python benchmarks/bench_sync_overhead.py [--write]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from benchlib import Bench  # noqa: E402

BENCH = Bench("sync_overhead", "## Sync's own cost on a 10 s program (`benchmarks/bench_sync_overhead.py`)")
PAIRS = int(os.environ.get("BENCH_SYNC_PAIRS", "6"))
MIN_S = float(os.environ.get("BENCH_SYNC_MIN_S", "10"))
BASELINE = os.environ.get("BENCH_SYNC_BASELINE")
TARGET = 1.2
JITTERSCOPE = ROOT / ".venv/bin/jitterscope"
BLOCK_MB = 100
SEED = 24


def make_block(path: Path) -> None:
    """100 MB of text pigz compresses about 3:1 (words of a small vocabulary, seeded): real work per byte."""
    rng = np.random.default_rng(SEED)
    words = np.array([bytes(rng.integers(97, 123, int(n)).astype(np.uint8)) for n in rng.integers(2, 10, 4096)])
    with open(path, "wb") as f:
        written = 0
        while written < BLOCK_MB << 20:
            chunk = b" ".join(words[rng.integers(0, len(words), 200_000)]) + b"\n"
            f.write(chunk)
            written += len(chunk)


def bare(data: Path) -> float:
    t = time.monotonic()
    subprocess.run(["pigz", "-p2", "-c", str(data)], stdout=subprocess.DEVNULL, check=True)
    return time.monotonic() - t


def traced(exe: str, data: Path, out: Path) -> tuple[float, dict[str, float] | None]:
    t = time.monotonic()
    subprocess.run(
        [exe, "sync", "--out", str(out), "--", "pigz", "-p2", "-c", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    wall = time.monotonic() - t
    oh = json.loads((out / "summary.json").read_text()).get("overhead")
    shutil.rmtree(out, ignore_errors=True)
    return wall, oh


def ratio_of_means(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a, axis=axis) / np.mean(b, axis=axis)


def geometric_ratio(s: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """The geometric mean of the pairs' sync / bare and its 95% BCa bootstrap interval."""
    from scipy import stats

    logs = np.log(s / b)
    ci = stats.bootstrap(
        (logs,), np.mean, vectorized=True, n_resamples=9999, method="BCa", random_state=SEED
    ).confidence_interval
    return float(np.exp(logs.mean())), float(np.exp(ci.low)), float(np.exp(ci.high))


def main() -> int:
    bench = BENCH
    bench.require(os.geteuid() == 0, "needs root (sync traces the kernel)")
    bench.require(shutil.which("pigz") is not None, "pigz is not installed (make packages)")
    bench.require(JITTERSCOPE.exists(), "no .venv/bin/jitterscope (make install)")

    with tempfile.TemporaryDirectory(prefix="bench-sync-overhead-") as tmp:
        block, data = Path(tmp) / "block", Path(tmp) / "data"
        make_block(block)
        os.link(block, data)
        once = bare(data)
        copies = max(1, int(np.ceil(MIN_S * 1.1 / once)))
        if copies > 1:  # repeats of a 100 MB block: gzip's 32 KiB window sees no repeat, so each costs as much
            data.unlink()
            with open(data, "wb") as f:
                for _ in range(copies):
                    with open(block, "rb") as b:
                        shutil.copyfileobj(b, f, 1 << 22)
        block.unlink()
        members = [("bare", None), ("sync", str(JITTERSCOPE))] + ([("baseline", BASELINE)] if BASELINE else [])
        walls: dict[str, list[float]] = {name: [] for name, _ in members}
        overheads: dict[str, list[dict[str, float]]] = {name: [] for name, _ in members}
        for i in range(PAIRS):
            for name, exe in members if i % 2 == 0 else members[::-1]:
                if exe is None:
                    walls[name].append(bare(data))
                else:
                    w, oh = traced(exe, data, Path(tmp) / f"run-{i}-{name}")
                    walls[name].append(w)
                    if oh:
                        overheads[name].append(oh)
            load = os.getloadavg()[0]
            bench.log(
                f"pair {i}: " + ", ".join(f"{n} {walls[n][-1]:.2f} s" for n, _ in members) + f" (load {load:.1f})"
            )
    b = np.array(walls["bare"])
    rows = []
    figures: dict[str, tuple[float, float, float]] = {}
    for name, _ in members[1:]:
        s = np.array(walls[name])
        figures[name] = geometric_ratio(s, b)
        split = overheads[name]

        def med(key: str, split: list[dict[str, float]] = split) -> str:
            v = [o[key] for o in split if o.get(key) is not None]
            return f"{statistics.median(v):.2f}" if v else "–"

        point, low, high = figures[name]
        rows.append(
            f"| {name} | {s.mean():.2f} | {point:.3f} [{low:.3f}, {high:.3f}] | {ratio_of_means(s, b):.3f} "
            f"| {med('startup_s')} | {med('program_s')} | {med('analysis_s')} | {med('report_s')} "
            f"| {med('own_s')} |"
        )
    point, low, high = figures["sync"]
    bench.check(
        f"sync -- pigz -p2 (bare >= {MIN_S:g} s): upper end of the 95% CI of the geometric mean of sync / bare "
        f"<= {TARGET}",
        high <= TARGET,
        f"{point:.3f}, CI [{low:.3f}, {high:.3f}]",
    )
    body = f"""`pigz -p2 -c DATA > /dev/null`, DATA {copies} x {BLOCK_MB} MB of seeded word text (the bare run took
{once:.2f} s per 100 MB when sized); {PAIRS} interleaved pairs (bare first in even pairs, last in odd ones);
`jitterscope sync` with its defaults (kernel trace and report on){" (baseline: " + BASELINE + ")" if BASELINE else ""}.
Ratio: the geometric mean of the pairs' wall / bare wall, 95% bootstrap CI (BCa); beside it the ratio of
the mean walls. The split is each run's `summary.json` `overhead` (medians, seconds; own = start-up +
analysis + report).

| run | mean wall (s) | / bare, geometric [95% CI] | means | start-up | CMD under sync | analysis | report | own |
|---|---|---|---|---|---|---|---|---|
| bare | {b.mean():.2f} | 1 | 1 | | | | | |
{chr(10).join(rows)}

```
{chr(10).join(bench.lines)}
```"""
    bench.section(body)
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())
