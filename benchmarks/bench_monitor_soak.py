"""Long runs stay flat (issue 24): `monitor` over 2,000 windows (a day at its defaults, accelerated).

A few real windows are measured once (`measure`, 1 s on the last CPU, traced and attributed, as the
monitor measures them); then the monitor's own window step (`Monitor.window`: load the run, attribute
sources, fold labels, detect against the baseline, prune the history, publish) runs WINDOWS times with
the defaults' interval (60 s, so labels age as they would over a day), each window a hard-linked copy
of one of the real ones in turn, and its metrics are scraped over HTTP from the monitor's own server
after every window, as Prometheus would.  Every 10 windows: RSS, open file descriptors and the number
of Prometheus series.  The first WARMUP windows are left out: the monitor's longest memories are its
history (100 windows kept) and its labels (a name idle for 3 h, 180 windows at 60 s, gives its label
up), so only after both have turned over is the state it keeps as big as it will get.  Targets: the
least-squares slope of RSS over the remaining windows, with its 95% confidence interval, below 1 KiB
per window (the interval's upper end, so a run too noisy to resolve 1 KiB misses it); open descriptors
and series in the last quarter no more than in the first quarter after the warm-up.  Needs root and
tracefs (for the real windows).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import Bench  # noqa: E402

from jitterscope.measure.lifecycle import measure  # noqa: E402
from jitterscope.monitor.loop import Monitor, MonitorOptions  # noqa: E402
from jitterscope.monitor.server import start_server  # noqa: E402
from jitterscope.sysinfo import online_cpus  # noqa: E402
from jitterscope.tracing.tracefs import tracing_available  # noqa: E402

WINDOWS = int(os.environ.get("BENCH_SOAK_WINDOWS", "2000"))
REAL = int(os.environ.get("BENCH_SOAK_REAL", "4"))
EVERY = 10
WARMUP = int(os.environ.get("BENCH_SOAK_WARMUP", "300"))
SLOPE_MAX = 1024.0  # bytes per window


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def series(text: str) -> int:
    return sum(1 for ln in text.splitlines() if ln and not ln.startswith("#"))


def main() -> int:
    bench = Bench("monitor_soak", "## Monitor soak (`benchmarks/bench_monitor_soak.py`)")
    bench.require(os.geteuid() == 0, "needs root (tracing)")
    ok, why = tracing_available()
    bench.require(ok, f"tracing is not available here: {why}")
    cpu = online_cpus()[-1]
    with tempfile.TemporaryDirectory() as tmp:
        real = [measure([cpu], 1e9, 1000.0, Path(tmp) / f"real{i}", trace=True) for i in range(REAL)]
        sizes = [sum(f.stat().st_size for f in r.rglob("*") if f.is_file()) for r in real]
        bench.log(f"{REAL} real 1 s windows on CPU {cpu}: {sum(sizes) / REAL / 1024**2:.1f} MiB each on average")
        calls = [0]

        def replay(out_dir: Path, **_kw: object) -> Path:
            # the window's run directory, as measure would leave it: a hard-linked copy of a real one
            shutil.copytree(real[calls[0] % REAL], out_dir, copy_function=os.link)
            calls[0] += 1
            return out_dir

        opts = MonitorOptions(cpus=[cpu], interval_s=60.0, window_s=1.0, history=Path(tmp) / "history")
        with open(os.devnull, "w") as quiet:
            mon = Monitor(opts, measure_fn=replay, log=quiet)
            srv = start_server(0, mon.registry)
            url = f"http://127.0.0.1:{srv.server_port}/metrics"
            rows: list[tuple[int, int, int, int]] = []
            t0 = time.monotonic()
            try:
                for w in range(1, WINDOWS + 1):
                    mon.window()
                    with urllib.request.urlopen(url, timeout=10) as r:
                        text = r.read().decode()
                    if w % EVERY == 0:
                        rows.append((w, rss_bytes(), open_fds(), series(text)))
            finally:
                srv.shutdown()
                srv.server_close()
            elapsed = time.monotonic() - t0
    bench.log(f"{WINDOWS} windows in {elapsed:.0f} s ({elapsed / WINDOWS * 1e3:.0f} ms per window, scrape included)")
    bench.log(f"failed windows: {mon.state.failures_total}")
    bench.log("window   RSS (MiB)   open fds   series   (every 100th window shown; sampled every 10)")
    for w, rss, fds, n in rows:
        if w % 100 == 0:
            bench.log(f"{w:6d}   {rss / 1024**2:9.1f}   {fds:8d}   {n:6d}")
    after = [r for r in rows if r[0] > WARMUP]
    fit = stats.linregress([r[0] for r in after], [r[1] for r in after])
    half = float(stats.t.ppf(0.975, len(after) - 2)) * fit.stderr
    hi = fit.slope + half
    bench.log(
        f"RSS slope over windows {WARMUP + 1}-{WINDOWS}: {fit.slope:+.0f} B per window, "
        f"95% CI [{fit.slope - half:+.0f}, {hi:+.0f}] ({len(after)} samples)"
    )
    bench.check(
        f"RSS slope over windows {WARMUP + 1}-{WINDOWS} < {SLOPE_MAX / 1024:.0f} KiB per window (95% CI's upper end)",
        hi < SLOPE_MAX and mon.state.failures_total == 0,
        f"{fit.slope:+.0f} B per window, upper end {hi:+.0f}",
    )
    q = len(after) // 4
    first, last = after[:q], after[-q:]
    fds0, fds1 = max(r[2] for r in first), max(r[2] for r in last)
    bench.check(
        "open file descriptors do not grow (most in the last quarter <= in the first)",
        fds1 <= fds0,
        f"{fds0} -> {fds1}",
    )
    ser0, ser1 = max(r[3] for r in first), max(r[3] for r in last)
    bench.check(
        "Prometheus series do not grow (most in the last quarter <= in the first)", ser1 <= ser0, f"{ser0} -> {ser1}"
    )
    bench.section()
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())
