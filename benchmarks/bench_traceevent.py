"""Our trace parser against libtraceevent on the same pages: CPU time of each decoder, side by side.

The pages of a real capture (bench_trace.big_trace: a CPU kept busy with context switches, replicated in
time to ~2.5 M events) are decoded by `jitterscope-traceparse` (intervals and segments) and by
`trace-cmd report -R` (libtraceevent, every event formatted as text to /dev/null) on a trace.dat that
`trace-cmd restore` wraps around the very same page files, as tests/integration/test_trace_cmd_crosscheck.py
does.  Runs alternate.  Target: ours takes <= 1/10 of libtraceevent's CPU time, the order of magnitude that
makes libtraceevent the oracle of the cross-check test rather than the parser.  Needs root, tracefs and
trace-cmd (`make packages`).
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trace import big_trace  # noqa: E402
from benchlib import Bench  # noqa: E402

from jitterscope.journal import Journal  # noqa: E402
from jitterscope.sysinfo import online_cpus  # noqa: E402
from jitterscope.tracing.parse import run_parser  # noqa: E402
from jitterscope.tracing.tracefs import ensure_tracefs, tracing_available  # noqa: E402

EVENTS = 2_500_000
REPEATS = 3
RATIO = 10.0


def _child_cpu(fn) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(CPU s of the children fn ran, wall s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    fn()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> int:
    bench = Bench("traceevent", "## Trace parsing against libtraceevent (`benchmarks/bench_traceevent.py`)")
    tc = shutil.which("trace-cmd")
    bench.require(tc is not None, "trace-cmd not installed (make packages)")
    bench.require(os.geteuid() == 0, "needs root (a real capture)")
    ok, why = tracing_available()
    bench.require(ok, f"tracing is not available here: {why}")
    version = subprocess.run([str(tc), "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    with tempfile.TemporaryDirectory(prefix="jitterscope-bench-tep-") as t:
        tmp = Path(t)
        big, events, source = big_trace(tmp, EVENTS)
        size_mb = sum(p.stat().st_size for p in big.glob("cpu*.raw")) / 1e6
        raw = []
        for cpu in range(max(online_cpus()) + 1):  # restore takes one file per CPU, in order
            f = big / f"cpu{cpu}.raw"
            if not f.exists():
                f.write_bytes(b"")
            raw.append(str(f))
        # trace-cmd restore mounts tracefs itself when it is not, and leaves it mounted: mounted here as jitterscope
        # mounts it (through a journal), and unmounted again after
        with Journal("bench-traceevent") as journal:
            bench.require(ensure_tracefs(journal) is not None, "tracefs cannot be mounted here")
            subprocess.run([str(tc), "restore", "-c", "-o", "head.dat"], cwd=tmp, check=True, capture_output=True)
            subprocess.run(
                [str(tc), "restore", "-i", "head.dat", "-o", "trace.dat", *raw],
                cwd=tmp,
                check=True,
                capture_output=True,
            )
        ours, theirs = [], []
        for i in range(REPEATS):
            out = tmp / f"out{i}"
            out.mkdir()
            ours.append(_child_cpu(lambda out=out: run_parser(big, out)))
            shutil.rmtree(out)
            theirs.append(
                _child_cpu(
                    lambda: subprocess.run(
                        [str(tc), "report", "-i", "trace.dat", "-R"], cwd=tmp, check=True, stdout=subprocess.DEVNULL
                    )
                )
            )
    o, th = statistics.median(c for c, _ in ours), statistics.median(c for c, _ in theirs)
    met = bench.check(
        f"jitterscope-traceparse uses <= 1/{RATIO:g} of libtraceevent's CPU time on the same pages",
        th / o >= RATIO,
        f"{th / o:.0f}x less",
    )
    body = f"""Input: {source}, its pages replicated to {events:,} kernel events ({size_mb:.0f} MB); the same page
files decoded by both, {REPEATS} runs each, alternating. trace-cmd: {" ".join(version[:1]) or "?"}.

| decoder | CPU (user + sys), median | CPU per run | wall per run |
|---|---|---|---|
| `jitterscope-traceparse` (intervals, segments) | {o:.2f} s | {", ".join(f"{c:.2f}" for c, _ in ours)} s \
| {", ".join(f"{w:.1f}" for _, w in ours)} s |
| `trace-cmd report -R > /dev/null` (text) | {th:.2f} s | {", ".join(f"{c:.2f}" for c, _ in theirs)} s \
| {", ".join(f"{w:.1f}" for _, w in theirs)} s |

**{th / o:.0f}x less CPU than libtraceevent** — target >= {RATIO:g}x: {met}. trace-cmd also formats every
event as text: the point is the order of magnitude."""
    bench.section(body)
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())
