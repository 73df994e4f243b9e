"""Per-source event counts against the kernel's own counters (`perf stat` on the same tracepoints).

`perf stat -C CPU` counts the tracepoints a source's events are (the local timer's
`irq_vectors:local_timer_entry`, a device IRQ's `irq:irq_handler_entry`, every
`irq:softirq_entry`, an injected daemon's `sched:sched_switch` in) on the probed
CPU, enabled and disabled through its control FIFO while `measure` runs.  Around
each enable and disable the test writes a trace marker from the probed CPU, so the
counting window is known in the run's own clock to within the enable's round trip:
the run's events must be at least those strictly inside the markers and at most
those between the outer markers.  The slack is the events seen during the two round
trips, measured on the trace itself (typically none).  The same counting over the
probe's window must be what summary.json reports.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from .conftest import needs_tracing, probed_cpu

DAEMON = "jsperfdaemon"
PERF_ON_S = 2.0
MARK = "jitterscope-test-perf-"


def _perf_reason(cpu: int) -> str | None:
    perf = shutil.which("perf")
    if perf is None:
        return "perf not installed (Debian linux-perf)"
    p = subprocess.run(
        [perf, "stat", "-x,", "-C", str(cpu), "-e", "irq:softirq_entry", "sleep", "0.05"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if p.returncode != 0 or "irq:softirq_entry" not in p.stderr:
        return f"perf stat cannot count tracepoints here: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


def _irq_counts(cpu: int) -> dict[int, tuple[int, str]]:
    """{irq number: (count on `cpu`, name)} of the numbered rows of /proc/interrupts."""
    lines = Path("/proc/interrupts").read_text().splitlines()
    col = lines[0].split().index(f"CPU{cpu}")
    out = {}
    for line in lines[1:]:
        f = line.split()
        if f and f[0].rstrip(":").isdigit():
            out[int(f[0].rstrip(":"))] = (int(f[1 + col]), f[-1])
    return out


def _firing_irq(cpu: int) -> tuple[int, str] | None:
    """The device IRQ that fired most on `cpu` over half a second (disk writes are running)."""
    a = _irq_counts(cpu)
    time.sleep(0.5)
    b = _irq_counts(cpu)
    delta = {n: b[n][0] - a.get(n, (0, ""))[0] for n in b}
    best = max(delta, key=lambda n: delta[n], default=None)
    return (best, b[best][1]) if best is not None and delta[best] > 0 else None


DISK_WRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    os.pwrite(fd, b"x" * 4096, 0)
    os.fsync(fd)
    time.sleep(0.002)
"""


def _wait_for(what: str, check, timeout: float = 30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = check()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _instance_marker(run: Path) -> Path | None:
    """trace_marker of the trace instance draining into `run` (its drain record names it)."""
    from jitterscope.tracing.instances import DRAIN_RECORDS
    from jitterscope.tracing.tracefs import find_tracefs

    root = find_tracefs()
    for rec in DRAIN_RECORDS.glob("*.json"):
        try:
            drain = json.loads(rec.read_text()).get("drain_to", "")
        except (OSError, ValueError):
            continue
        if root is not None and drain.startswith(str(run)):
            return root / "instances" / rec.stem / "trace_marker"
    return None


def _probe_running(run: Path) -> bool:
    try:
        return json.loads((run / "capture.json").read_text()).get("t0_tsc") is not None
    except (OSError, ValueError):
        return False


class Perf:
    """perf stat on `cpu`, started disabled, switched through its control FIFO."""

    def __init__(self, tmp: Path, cpu: int, events: list[list[str]]) -> None:
        self.ctl, self.ack, self.out = tmp / "perf.ctl", tmp / "perf.ack", tmp / "perf.csv"
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)
        cmd = ["perf", "stat", "-x,", "-C", str(cpu), "-D", "-1", "--control", f"fifo:{self.ctl},{self.ack}"]
        for ev in events:
            cmd += ["-e", ev[0]] + (["--filter", ev[1]] if len(ev) > 1 else [])
        self.proc = subprocess.Popen(cmd + ["-o", str(self.out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.ctl_fd = os.open(self.ctl, os.O_WRONLY)  # blocks until perf opens its end
        self.ack_fd = os.open(self.ack, os.O_RDONLY)

    def command(self, what: str) -> None:
        os.write(self.ctl_fd, f"{what}\n".encode())
        assert os.read(self.ack_fd, 16).startswith(b"ack")

    def counts(self) -> list[int]:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=20)
        os.close(self.ctl_fd)
        os.close(self.ack_fd)
        rows = [r.split(",") for r in self.out.read_text().splitlines() if r and not r.startswith("#")]
        return [int(r[0]) for r in rows]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@needs_tracing
@pytest.mark.root
@pytest.mark.slow
def test_event_counts_equal_perfs_tracepoint_counts(tmp_path: Path) -> None:
    from jitterscope.tracing.parse import parse_trace
    from jitterscope.tracing.tracefs import VECTORS

    cpu = probed_cpu()
    reason = _perf_reason(cpu)
    if reason:
        pytest.skip(reason)
    run = tmp_path / "run"
    procs: list[subprocess.Popen] = []
    perf = None
    js = [sys.executable, "-m", "jitterscope"]
    try:
        procs.append(subprocess.Popen([sys.executable, "-c", DISK_WRITER, str(tmp_path / "disk"), "20"]))
        irq = _firing_irq(cpu)
        if irq is None:
            pytest.skip(f"no device IRQ fires on CPU {cpu} here, even under disk writes")
        irq_no, irq_name = irq
        procs.append(
            subprocess.Popen(
                js
                + ["inject", "--cpu", str(cpu), "--period", "20ms", "--busy", "200us"]
                + ["--duration", "20s", "--name", DAEMON],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        events = [
            ["irq_vectors:local_timer_entry"],
            ["sched:sched_switch", f'next_comm == "{DAEMON}"'],
            ["irq:irq_handler_entry", f"irq == {irq_no}"],
            ["irq:irq_handler_entry"],
            ["irq:softirq_entry"],
        ]
        perf = Perf(tmp_path, cpu, events)
        measure = subprocess.Popen(
            js + ["measure", "--cpus", str(cpu), "--duration", "4s", "--out", str(run), "--no-report"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(measure)
        marker = _wait_for("the run's trace instance", lambda: _instance_marker(run))
        _wait_for("the probe", lambda: _probe_running(run))
        time.sleep(0.3)
        # Markers are written from the probed CPU: the instance traces that CPU only.
        saved = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu})
        try:
            with open(marker, "w") as m:

                def mark(text: str) -> None:
                    m.write(MARK + text)
                    m.flush()

                mark("enable-0")
                perf.command("enable")
                mark("enable-1")
                time.sleep(PERF_ON_S)
                mark("disable-0")
                perf.command("disable")
                mark("disable-1")
        finally:
            os.sched_setaffinity(0, saved)
        out, err = measure.communicate(timeout=60)
        assert measure.returncode == 0, err
        perf_counts = perf.counts()
    finally:
        if perf is not None:
            perf.stop()
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)

    td = parse_trace(run / "trace")
    assert td.lost_events == 0, "the trace lost events: counts cannot be compared"
    marks = {m["text"][len(MARK) :].strip(): int(m["tsc"]) for m in td.markers if m["text"].startswith(MARK)}
    assert set(marks) == {"enable-0", "enable-1", "disable-0", "disable-1"}, td.markers
    act = td.activity
    on_cpu = act.column("cpu").to_numpy() == cpu
    entered = act.column("entered").to_numpy(zero_copy_only=False)
    start = act.column("start_tsc").to_numpy()
    kind = np.asarray(act.column("kind").to_pylist(), dtype=object)
    name = np.asarray(act.column("name").to_pylist(), dtype=object)
    detail = np.asarray(act.column("detail").to_pylist(), dtype=object)
    vectors = set(VECTORS) | {"local_timer"}
    sources = {
        "local timer": (kind == "irq") & (name == "local_timer"),
        f"daemon {DAEMON} switched in": (kind == "thread") & (name == DAEMON),
        f"IRQ {irq_no} ({irq_name})": (kind == "irq") & (detail == str(irq_no)) & ~np.isin(name, list(vectors)),
        "all device IRQs": (kind == "irq") & ~np.isin(name, list(vectors)),
        "all softirqs": kind == "softirq",
    }

    def between(sel: np.ndarray, a: int, b: int) -> int:
        return int(np.count_nonzero(sel & on_cpu & entered & (start >= a) & (start <= b)))

    report = []
    for (label, sel), got in zip(sources.items(), perf_counts):
        inner = between(sel, marks["enable-1"], marks["disable-0"])
        outer = between(sel, marks["enable-0"], marks["disable-1"])
        report.append(f"{label}: perf {got}, run {inner}..{outer}")
        assert inner <= got <= outer, "; ".join(report)
    assert perf_counts[0] > 0 and perf_counts[1] > 0 and perf_counts[2] > 0, "; ".join(report)
    print("; ".join(report))

    # summary.json counts the same way over the probe's window
    summary = json.loads((run / "summary.json").read_text())
    meta = json.loads((run / "meta.json").read_text())
    probe = meta["probe"][str(cpu)]
    rows = {(s["kind"], s["name"]): s for s in summary["sources"] + summary["quiet_sources"]}
    window = int(probe["first_tsc"]), int(probe["last_tsc"])
    for key in (("irq", "local_timer"), ("thread", DAEMON), ("irq", irq_name)):
        assert rows[key]["events"] == between((kind == key[0]) & (name == key[1]), *window), key
