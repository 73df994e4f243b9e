"""Benchmark of the analysis of a many-CPU capture, by simulation (issue 24 item 3): a real `measure`
capture of one CPU (its raw trace pages and probe records, kept as a cut-short run keeps them) is replicated
to N CPUs (N = 1, 2, 16, 64, 256), each CPU's pages shifted in time (the page header's timestamp: every event
in a page is a delta from it) and spaced to RATE kernel events per second per CPU (3 k and 30 k) for SECONDS
(60), then rebuilt by `jitterscope analyze --no-report`.

Printed per (N, rate): events, CPU seconds and wall of the analysis, events per core-second, peak RSS, and
the projected wall time on a 64-core analysis host: events / (events per core-second x min(N, 64) x e),
where e is the parallel efficiency measured here at 2 cores (the same capture analysed by two processes side
by side against one alone: per-CPU analysis is independent work).  A capture the disk cannot hold (with
a margin) is not generated: that row says so.  An analysis above MEM_CAP of RSS is stopped (this machine is
shared) and reported as over the cap.
Targets: peak RSS <= 512 MiB for 256 CPUs (each rate).
Settings: BENCH_SCALE_SECONDS (60), BENCH_SCALE_CPUS (1,2,16,64,256), BENCH_SCALE_RATES (3000,30000),
BENCH_SCALE_MEM_CAP_MB (4096), BENCH_SCALE_DIR (where captures are generated; default a temporary directory
under /var/tmp).
Run: .venv/bin/python benchmarks/bench_scale.py [--write]
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from benchlib import Bench  # noqa: E402

BENCH = Bench("scale", "## Many CPUs by simulation (`benchmarks/bench_scale.py`)")
SECONDS = float(os.environ.get("BENCH_SCALE_SECONDS", "60"))
CPUS = [int(x) for x in os.environ.get("BENCH_SCALE_CPUS", "1,2,16,64,256").split(",")]
RATES = [int(x) for x in os.environ.get("BENCH_SCALE_RATES", "3000,30000").split(",")]
MEM_CAP = int(os.environ.get("BENCH_SCALE_MEM_CAP_MB", "4096")) << 20
TARGET_RSS = 512 << 20
HOST_CORES = 64
JITTERSCOPE = ROOT / ".venv/bin/jitterscope"
PAGE = 4096
COMMIT_MASK = (1 << 27) - 1  # the ring buffer page's commit field: size in the low bits, flags above


@dataclass
class Template:
    """One CPU's real capture: its pages (header timestamps parsed), probe records and run files."""

    dir: Path
    cpu: int
    pages: np.ndarray  # uint8 [n, PAGE]
    ts: np.ndarray  # header timestamp per page (TSC)
    events: int  # kernel events in the capture (the analysis's count)
    tsc_hz: float


def capture_template(work: Path) -> Path:
    """A 3 s `measure` of the last CPU, killed once the probe has ended: the raw capture a cut-short run keeps
    (what `jitterscope analyze` rebuilds).  While it runs, two threads pass a byte back and forth there so the
    pages are full of scheduler events, as on a busy CPU."""
    cpu = os.cpu_count() - 1 if os.cpu_count() else 0
    out = work / "template-run"
    storm = subprocess.Popen(
        [sys.executable, "-c", _STORM, str(cpu)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        proc = subprocess.Popen(
            [str(JITTERSCOPE), "measure", "--cpus", str(cpu), "--duration", "3s", "--no-report", "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while not (out / "detours.end.json").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        # the probe's end record is written as it ends (measure/steps.py), before the analysis: the raw files
        # are complete and kept, and what the session had not stopped is completed offline (complete_cut_short)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        storm.kill()
        storm.wait()
    if not (out / "detours.raw").exists():
        BENCH.not_run("could not keep a raw capture to replicate (measure finished or failed first)")
    return out


_STORM = """
import os, sys, threading
os.sched_setaffinity(0, {int(sys.argv[1])})
r1, w1 = os.pipe(); r2, w2 = os.pipe()
def echo():
    while os.read(r1, 1): os.write(w2, b"x")
threading.Thread(target=echo, daemon=True).start()
while True:
    os.write(w1, b"x"); os.read(r2, 1)
"""


def load_template(run: Path) -> Template:
    cap = json.loads((run / "capture.json").read_text())
    cpu = int(cap["meta"]["cpus"][0])
    raw = np.fromfile(run / "trace" / f"cpu{cpu}.raw", np.uint8)
    pages = raw[: len(raw) // PAGE * PAGE].reshape(-1, PAGE)
    ts = pages[:, :8].copy().view("<u8").ravel()
    commit = pages[:, 8:16].copy().view("<u8").ravel() & COMMIT_MASK
    keep = commit > 0
    pages, ts = pages[keep], ts[keep]
    order = np.argsort(ts, kind="stable")
    events = _count_events(run)
    return Template(run, cpu, pages[order], ts[order], events, float(cap["tsc_hz"]))


def _count_events(run: Path) -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from jitterscope.tracing.parse import parse_trace

    return int(parse_trace(run / "trace").n_events)


def generate(t: Template, n: int, rate: float, out: Path) -> tuple[int, int]:
    """A raw capture of `n` CPUs at about `rate` events/s each for SECONDS; returns (events, bytes).

    The template's pages are laid end to end until SECONDS are covered; the gaps between pages are scaled so
    the events per second come to `rate`, but never shortened (a page's events must stay before the next
    page's): a rate above the template's own is capped at it and the achieved rate is what is reported."""
    span = float(t.ts[-1] - t.ts[0]) or 1.0
    r0 = t.events / (span / t.tsc_hz)
    scale = max(r0 / rate, 1.0)
    gaps = np.diff(t.ts).astype(np.float64) * scale
    cycle = float(gaps.sum() + np.median(gaps))  # template length at this rate, plus one gap before repeating
    reps = int(np.ceil(SECONDS * t.tsc_hz / cycle))
    base = int(t.ts[0])
    offs = np.concatenate([[0.0], np.cumsum(gaps)])
    stamps = (base + (np.arange(reps)[:, None] * cycle + offs[None, :]).ravel()).astype(np.uint64)
    stamps = stamps[: max(int(np.searchsorted(stamps, base + SECONDS * t.tsc_hz)), 1)]  # SECONDS, not a cycle more
    per_page = t.events / len(t.pages)
    shutil.copytree(t.dir, out, ignore=shutil.ignore_patterns("cpu*.raw", "detours.raw"))
    total = 0
    for k in range(n):
        # each CPU shifted by a fraction of a gap: its pages are not the others' to the nanosecond
        shift = np.uint64(int(k * float(np.median(gaps)) / max(n, 1)))
        with open(out / "trace" / f"cpu{k}.raw", "wb") as f:
            for r in range(int(np.ceil(len(stamps) / len(t.pages)))):
                part = stamps[r * len(t.pages) : (r + 1) * len(t.pages)]
                block = t.pages[: len(part)].copy()
                block[:, :8] = (part + shift).view(np.uint8).reshape(-1, 8)
                f.write(block.tobytes())
                total += block.nbytes
    _probe_files(t, n, out, cycle, reps, base, int(stamps[-1]))
    return int(per_page * len(stamps) * n), total


def _probe_files(t: Template, n: int, out: Path, cycle: float, reps: int, base: int, last: int) -> None:
    """capture.json, detours.raw and detours.end.json for CPUs 0..n-1: the template's, its detours repeated
    in every cycle on every CPU."""
    sys.path.insert(0, str(ROOT / "src"))
    from jitterscope.measure.probe_format import DETOUR_DTYPE, HEADER_DTYPE

    raw = (t.dir / "detours.raw").read_bytes()
    header = np.frombuffer(raw[: HEADER_DTYPE.itemsize], HEADER_DTYPE).copy()
    det = np.frombuffer(
        raw[HEADER_DTYPE.itemsize :][
            : (len(raw) - HEADER_DTYPE.itemsize) // DETOUR_DTYPE.itemsize * DETOUR_DTYPE.itemsize
        ],
        DETOUR_DTYPE,
    )
    rel = det["start_tsc"].astype(np.float64) - base
    rows = []
    for k in range(n):
        for r in range(reps):
            d = det.copy()
            d["cpu"] = k
            d["start_tsc"] = (base + r * cycle + rel).astype(np.uint64)
            rows.append(d[d["start_tsc"] < last])
    allrec = np.concatenate(rows) if rows else det[:0]
    header["n_records"] = len(allrec)
    with open(out / "detours.raw", "wb") as f:
        f.write(header.tobytes())
        f.write(allrec.tobytes())
    cap = json.loads((t.dir / "capture.json").read_text())
    cpus = list(range(n))
    cap["meta"]["cpus"] = cpus
    tid = next(iter(cap["probe_tids"].values()))
    cap["probe_tids"] = {str(k): tid for k in cpus}
    for key in ("steal_ticks_before",):
        if key in cap:
            v = next(iter(cap[key].values()))
            cap[key] = {str(k): v for k in cpus}
    (out / "capture.json").write_text(json.dumps(cap))
    end = json.loads((t.dir / "detours.end.json").read_text())
    one = next(iter(end["cpus"].values()))
    end["end_tsc"] = last
    end["records"] = len(allrec)
    end["cpus"] = {
        str(k): {
            **one,
            "first_tsc": base,
            "last_tsc": last,
            "detours": len(allrec) // n,
            "iterations": one["iterations"] * reps,
        }
        for k in cpus
    }
    (out / "detours.end.json").write_text(json.dumps(end))


@dataclass
class Analysis:
    wall_s: float
    cpu_s: float
    peak_rss: int
    ok: bool
    why: str = ""


def analyse(run: Path) -> Analysis:
    """`jitterscope analyze --no-report RUN`: its wall time, CPU time and peak memory, stopped at MEM_CAP:
    the larger of its own peak RSS (VmHWM) and the peak, polled, of its process tree's PSS (its workers
    and parsers count too)."""
    t = time.monotonic()
    before = os.times()
    proc = subprocess.Popen(
        [str(JITTERSCOPE), "analyze", "--no-report", str(run)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    peak, capped = 0, False
    while proc.poll() is None:
        peak = max(peak, _hwm(proc.pid), _tree_pss(proc.pid))
        if peak > MEM_CAP:
            proc.kill()
            capped = True
        time.sleep(0.05)
    err = proc.stderr.read().decode(errors="replace").strip().splitlines() if proc.stderr else []
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    why = f"stopped above {MEM_CAP >> 20} MiB" if capped else (err[-1] if proc.returncode else "")
    return Analysis(time.monotonic() - t, cpu, peak, proc.returncode == 0, why)


def _hwm(pid: int) -> int:
    """The process's peak RSS in bytes; 0 once it has gone (its last sample stands)."""
    hwm = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except OSError:
        pass
    return hwm


def _tree_pss(pid: int) -> int:
    """The proportional set size (bytes) of `pid` and every process below it (the analysis's worker
    processes and their parsers): pages shared since a fork counted once, not once per process."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += sum(int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:"))
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue  # gone while being read
    return total


def efficiency(run: Path, work: Path) -> float:
    """Parallel efficiency at 2 cores: two analyses side by side (of two copies of a capture) against one
    alone: 1 when the pair takes as long as one alone."""
    copies = [work / "eff-a", work / "eff-b"]
    for c in copies:
        shutil.rmtree(c, ignore_errors=True)
        shutil.copytree(run, c)
    alone = analyse(copies[0])
    shutil.rmtree(copies[0])
    shutil.copytree(run, copies[0])
    t = time.monotonic()
    procs = [
        subprocess.Popen(
            [str(JITTERSCOPE), "analyze", "--no-report", str(c)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for c in copies
    ]
    codes = [p.wait() for p in procs]
    pair = time.monotonic() - t
    if any(codes) or not alone.ok:
        BENCH.not_run(f"the efficiency check's analyses failed (exit codes {codes}, alone: {alone.why})")
    for c in copies:
        shutil.rmtree(c, ignore_errors=True)
    return alone.wall_s / pair


def main() -> int:
    bench = BENCH
    bench.require(os.geteuid() == 0, "needs root (the template is a real measure capture)")
    bench.require(JITTERSCOPE.exists(), "no .venv/bin/jitterscope (make install)")
    parent = Path(os.environ.get("BENCH_SCALE_DIR", "/var/tmp"))
    with tempfile.TemporaryDirectory(prefix="bench-scale-", dir=parent) as tmp:
        work = Path(tmp)
        t = load_template(capture_template(work))
        r0 = t.events / (float(t.ts[-1] - t.ts[0]) / t.tsc_hz)
        bench.log(
            f"template: CPU {t.cpu}, {len(t.pages)} pages, {t.events:,} events, {r0:,.0f} events/s, "
            f"{t.pages.nbytes / max(t.events, 1):.0f} B/event"
        )
        rows: list[tuple[int, int, tuple[int, int, Analysis] | None, str]] = []
        eff: float | None = None
        for rate in RATES:
            for n in CPUS:
                est = t.pages.nbytes / max(t.events, 1) * min(rate, r0) * SECONDS * n
                free = shutil.disk_usage(work).free
                if est > 0.5 * free:
                    rows.append((n, rate, None, f"not generated: {est / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"))
                    bench.log(rows[-1][3] + f" (N={n}, {rate}/s)")
                    continue
                run = work / f"n{n}-r{rate}"
                events, size = generate(t, n, rate, run)
                if eff is None:
                    eff = efficiency(run, work)
                    bench.log(f"parallel efficiency at 2 cores (two analyses side by side, N={n}): {eff:.2f}")
                a = analyse(run)
                shutil.rmtree(run, ignore_errors=True)
                rows.append((n, rate, (events, size, a), ""))
                per_core = events / a.cpu_s if a.cpu_s > 0 else 0.0
                bench.log(
                    f"N={n:4d} {rate:6d}/s: {events:>12,} events ({events / n / SECONDS:,.0f}/s per CPU, "
                    f"{size / events if events else 0:.0f} B/event), "
                    f"analysis {a.wall_s:7.1f} s wall {a.cpu_s:7.1f} s CPU, {per_core / 1e6:6.2f} M events/core-s, "
                    f"peak RSS {a.peak_rss / 2**20:7.0f} MiB" + ("" if a.ok else f"  FAILED: {a.why}")
                )
    e = min(eff, 1.0) if eff else 1.0  # above 1 is the shared machine's noise: never project a super-linear gain
    table = [
        "| N CPUs | rate/CPU | events | analysis wall (s) | M events/core-s | peak RSS (MiB) "
        "| projected 64-core wall (s) | |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, rate, res, note in rows:
        if res is None:
            table.append(f"| {n} | {rate:,} | | | | | | {note} |")
            continue
        events, _, a = res
        per_core = events / a.cpu_s if a.cpu_s > 0 and a.ok else 0.0
        proj = events / (per_core * min(n, HOST_CORES) * e) if per_core else float("nan")
        table.append(
            f"| {n} | {rate:,} | {events:,} | {a.wall_s:.1f} | {per_core / 1e6:.2f} | {a.peak_rss / 2**20:.0f}"
            f"{'' if a.ok else ' (' + a.why + ')'} | {proj:.1f} | {'' if a.ok else 'failed'} |"
        )
        if n == 256:
            bench.check(
                f"256 CPUs at {rate:,}/s: peak RSS <= 512 MiB",
                a.ok and a.peak_rss <= TARGET_RSS,
                f"{a.peak_rss / 2**20:.0f} MiB" + ("" if a.ok else f", {a.why}"),
            )
    if not any(n == 256 for n, _, res, _ in rows if res is not None):
        bench.check("256 CPUs: peak RSS <= 512 MiB", False, "not run: the 256-CPU capture was not generated")
    body = f"""Template: a real 3 s `measure` capture of one CPU under a pipe ping-pong (kept raw, as a cut-short run
keeps it), {t.events:,} kernel events at {r0:,.0f}/s; replicated per CPU for {SECONDS:g} s, page header timestamps
shifted (a rate above the template's own is capped at it). Analysis: `jitterscope analyze --no-report` (its
default --jobs: a worker process per CPU here, the CPUs' traces handed out in order); events per core-second =
events / the CPU time of the command and its workers, start-up included (about 1 s here, so the small
captures' rates say little). Peak RSS: the larger of the command's own peak and the polled peak of its
process tree's PSS (workers and parsers included). Projection on a {HOST_CORES}-core host: events / (rate
per core x min(N, {HOST_CORES}) x e), e = {e:.2f} the efficiency measured here at 2 cores (two analyses
side by side vs one alone; at most 1) -- what a per-CPU parallel analysis would reach (the
command's own Parquet writing is not parallel: see "Streaming analysis").

{chr(10).join(table)}

```
{chr(10).join(bench.lines)}
```"""
    bench.section(body)
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())
