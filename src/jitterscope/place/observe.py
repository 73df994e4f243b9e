"""OBS-M (spec B.1): what one task did over its last quantum, from what the machine offers.

Always, the kernel's software data per thread, summed over the process:
`/proc/PID/task/TID/schedstat` (time on CPU, time waiting on a run queue,
slices), `status` (voluntary and involuntary context switches), `stat` (minor
and major page faults, the CPU it last ran on) and `/proc/PID/arch_status`
(AVX-512 use, x86).  The cache weight w = LLC misses / cycles over the task's
immediately preceding quantum (B.2, no smoothing) comes from the first source
available, named in every observation:

  pmu       per-task hardware counters (pmu.py), where the CPU has a PMU
  declared  a weight the user gave (--declare NAME=heavy|light|W, --labels FILE)
  profiled  from a labels file `place profile` wrote: cachegrind LL misses per instruction x an assumed IPC
  probe     from a labels file `place profile --probe` wrote: a calibrated interference probe's slowdown
  oracle    the weight the workload publishes through the place API (js_place.h)
  none      nothing known: weight 0

Throughput comes from the workloads themselves (the report API's op counter);
a workload that publishes heartbeats (the report API's `beat`, e.g.
jitterscope-chase) gives its per-iteration latencies too (`Beats`): the
measured noise of a protected task.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jitterscope.place.pmu import Counters
from jitterscope.place.records import NO_WEIGHT, PlacePage
from jitterscope.place.results import Observation
from jitterscope.protect.records import REPORT_BEATS, REPORT_DTYPE
from jitterscope.protect.report import ReportPage

SOURCES = ("pmu", "declared", "profiled", "probe", "oracle", "none")


@dataclass
class Snap:
    run_ns: int
    wait_ns: int
    slices: int
    vcsw: int
    ivcsw: int
    minflt: int
    majflt: int
    cpu: int
    avx512_ms: int
    ops: int
    specials: int
    faults: int
    oracle: float | None
    pmu: tuple[int, int, int, int] | None
    nice: int = 0


_FILES = ("schedstat", "status", "stat")
_OPEN: dict[tuple[int, int], tuple[int, ...]] = {}  # (pid, tid) -> fds of its schedstat, status, stat (arch_status)


def _fds(pid: int, tid: int) -> tuple[int, ...]:
    """The thread's /proc files, opened once and read with pread at every snapshot (an open is ~3/4 of the
    cost of a read; a descriptor stays bound to its thread, so a reused TID cannot be read by mistake)."""
    fds = _OPEN.get((pid, tid))
    if fds is None:
        names = [f"/proc/{pid}/task/{tid}/{n}" for n in _FILES] + ([f"/proc/{pid}/arch_status"] if tid == pid else [])
        opened: list[int] = []
        try:
            for n in names:
                try:
                    opened.append(os.open(n, os.O_RDONLY))
                except FileNotFoundError:
                    if not n.endswith("arch_status"):  # arch_status: x86 only
                        raise
        except OSError:
            for fd in opened:
                os.close(fd)
            raise
        fds = _OPEN[(pid, tid)] = tuple(opened)
    return fds


def forget(pid: int | None = None) -> None:
    """Close the files of a process (every process: None) once it is no longer observed."""
    for key in [k for k in _OPEN if pid is None or k[0] == pid]:
        for fd in _OPEN.pop(key):
            os.close(fd)


def _field(text: bytes, key: bytes) -> int:
    i = text.find(key)
    return int(text[i + len(key) : text.index(b"\n", i + len(key))]) if i >= 0 else -1


def _thread(pid: int, tid: int) -> tuple[list[int], int, int, int] | None:
    """(run, wait, slices, vcsw, ivcsw, minflt, majflt), CPU, nice and AVX-512 ms of one thread; None if gone."""
    try:
        fds = _fds(pid, tid)
        sched, status, st = (os.pread(fd, 4096, 0) for fd in fds[:3])
        avx = _field(os.pread(fds[3], 256, 0), b"AVX512_elapsed_ms:") if len(fds) > 3 else -1
    except OSError:
        fds = _OPEN.pop((pid, tid), ())
        for fd in fds:
            os.close(fd)
        return None
    f = st[st.rindex(b")") + 2 :].split()
    if f[0] in (b"Z", b"X"):
        return None  # exited (a zombie until its parent reaps it): not a task to observe or place
    run, wait, slices = (int(x) for x in sched.split()[:3])
    return (
        [
            run,
            wait,
            slices,
            _field(status, b"\nvoluntary_ctxt_switches:"),
            _field(status, b"nonvoluntary_ctxt_switches:"),
            int(f[7]),
            int(f[9]),
        ],
        int(f[36]),
        int(f[16]),
        avx,
    )


def snapshot(pid: int, page: PlacePage | None, report: ReportPage | None, pmu: Counters | None) -> Snap | None:
    """The process's cumulative counters now; None if it is gone."""
    tot = [0] * 7
    cpu = nice = avx = -1
    try:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        forget(pid)
        return None
    for key in [k for k in _OPEN if k[0] == pid and k[1] not in tids]:  # threads that ended
        for fd in _OPEN.pop(key):
            os.close(fd)
    for tid in tids:
        got = _thread(pid, tid)
        if got is None:
            continue  # a thread that just ended
        for i, x in enumerate(got[0]):
            tot[i] += x
        if tid == pid or cpu < 0:  # the leader's, or a live thread's if the leader exited (pthread_exit)
            cpu, nice, avx = got[1], got[2], got[3]
    if cpu < 0:
        return None
    pc = page.counters() if page else {}
    ops = report.counters()["ops"] if report else 0
    w = pc.get("weight_ppm", NO_WEIGHT)
    return Snap(
        tot[0],
        tot[1],
        tot[2],
        tot[3],
        tot[4],
        tot[5],
        tot[6],
        cpu,
        avx,
        ops,
        pc.get("specials", 0),
        pc.get("faults", 0),
        None if w == NO_WEIGHT else w / 1e6,
        pmu.read() if pmu else None,
        nice,
    )


def weight(a: Snap, b: Snap, declared: float | None, source: str = "declared") -> tuple[float, str]:
    """The policy input from one quantum (a -> b) and its source (module docstring's order)."""
    if a.pmu is not None and b.pmu is not None:
        cycles, misses = b.pmu[0] - a.pmu[0], b.pmu[1] - a.pmu[1]
        return (misses / cycles if cycles > 0 else 0.0), "pmu"
    if declared is not None:
        return declared, source
    if b.oracle is not None:
        return b.oracle, "oracle"
    return 0.0, "none"


def row(
    pid: int, name: str, start_ns: int, end_ns: int, a: Snap, b: Snap, w: float, source: str, cpu: int
) -> Observation:
    """One observation (a row of the run's observations table)."""
    hw = [y - x for x, y in zip(a.pmu, b.pmu)] if a.pmu and b.pmu else [-1, -1, -1, -1]
    return {
        "pid": pid,
        "name": name,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "cpu": cpu,
        "last_cpu": b.cpu,
        "run_ns": b.run_ns - a.run_ns,
        "wait_ns": b.wait_ns - a.wait_ns,
        "slices": b.slices - a.slices,
        "vcsw": b.vcsw - a.vcsw,
        "ivcsw": b.ivcsw - a.ivcsw,
        "minflt": b.minflt - a.minflt,
        "majflt": b.majflt - a.majflt,
        "ops": b.ops - a.ops,
        "specials": b.specials - a.specials,
        "faults": b.faults - a.faults,
        "avx512_ms": b.avx512_ms,
        "cycles": hw[0],
        "llc_misses": hw[1],
        "instructions": hw[2],
        "llc_refs": hw[3],
        "weight": w,
        "source": source,
    }


class Beats:
    """A task's heartbeats (report API) read since the last call: the ring holds REPORT_BEATS, read once a
    quantum, so a task beating faster than REPORT_BEATS per quantum loses the oldest (counted in `lost`)."""

    def __init__(self, path: Path) -> None:
        self._p = np.memmap(path, dtype=REPORT_DTYPE, mode="r", shape=())
        self.seen, self.lost = 0, 0
        self.latencies: list[np.ndarray] = []

    def read(self) -> None:
        n = int(self._p["beats"])
        first = max(self.seen, n - REPORT_BEATS)
        self.lost += first - self.seen
        if n > first:
            idx = np.arange(first, n) % REPORT_BEATS
            self.latencies.append(np.array(self._p["beat"]["latency_ns"][idx], dtype=np.int64))
        self.seen = n

    def all(self) -> np.ndarray:
        return np.concatenate(self.latencies) if self.latencies else np.zeros(0, dtype=np.int64)
