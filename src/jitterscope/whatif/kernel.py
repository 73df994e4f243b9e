"""Kernel bursts for `whatif cache`: when the kernel ran and for how long, per source, from a `measure`
run (its traced kernel activity on one CPU), or one synthetic periodic source; and the memory model of
a burst, since a guest cannot trace kernel memory (spec A.8 "Kernel traces"):

* sources: interrupts, softirqs and NMIs, and kernel threads (kworker, ksoftirqd, rcu_*, ...) as the
  run's activity table names them; other user tasks are not the OS and are left out; an interval
  nested in another kernel interval belongs to the outer one;
* a burst of duration d issues d / access-time accesses that sweep its source's own footprint (a
  distinct kernel address range per source, continuing where its last burst stopped), every
  `write_every`-th a store; a burst longer than two sweeps is cut to two (after one whole sweep the
  caches' state no longer changes, only the kernel's own misses would grow);
* the run's timeline repeats if the program's trace lasts longer than the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from jitterscope.errors import JitterscopeError
from jitterscope.rundir import load_run
from jitterscope.whatif.cachesim import LINE, Bursts

KERNEL_KINDS = ("irq", "softirq", "nmi")
KTHREAD = re.compile(
    r"^(kworker|ksoftirqd|rcu|migration|kthreadd|kswapd|kcompactd|watchdog|cpuhp|khugepaged|"
    r"kblockd|irq/|jbd2|kauditd|oom_reaper|writeback|kdevtmpfs|idle_inject|scsi_|khungtaskd|"
    r"kintegrityd|ksmd|kthrotld|psimon|kdamond|ext4|xfs)"
)
KERNEL_BASE = 0xFFFF_8880_0000_0000
WRITE_EVERY = 4


@dataclass
class Timeline:
    """Kernel bursts on one CPU: start and duration (ns since the run's start), source index."""

    names: list[str]
    start_ns: np.ndarray
    dur_ns: np.ndarray
    src: np.ndarray
    span_ns: float
    origin: str


def _is_kernel(kind: str, name: str) -> bool:
    return kind in KERNEL_KINDS or (kind == "thread" and bool(KTHREAD.match(name)))


def from_run(path: object, cpu: int | None) -> Timeline:
    run = load_run(str(path), kinds=("measure",), purpose="whatif cache --os-trace")
    act = run.activity.to_pylist()
    if not act:
        raise JitterscopeError(
            f"{path}: the run has no kernel activity (measured with --no-trace?): "
            "measure with tracing, or use --os-rate"
        )
    cpus = sorted({r["cpu"] for r in act})
    cpu = cpus[0] if cpu is None else cpu
    if cpu not in cpus:
        raise JitterscopeError(f"{path}: no kernel activity on CPU {cpu} (it has {', '.join(map(str, cpus))})")
    span = float(run.duration_ns)
    rows = sorted(
        (
            r
            for r in act
            if r["cpu"] == cpu
            and _is_kernel(r["kind"], r["name"])
            and 0 <= r["start_ns"] < span
            and r["end_ns"] > r["start_ns"]
        ),
        key=lambda r: r["start_ns"],
    )
    names: dict[str, int] = {}
    out: list[tuple[int, int, int]] = []
    end = -1
    for r in rows:
        if r["start_ns"] < end:
            continue  # nested in the previous burst: the outer one's time
        key = f"{r['kind']}:{r['name']}"
        out.append((r["start_ns"], r["end_ns"] - r["start_ns"], names.setdefault(key, len(names))))
        end = r["end_ns"]
    if not out:
        raise JitterscopeError(f"{path}: no kernel burst (interrupt, softirq, kernel thread) on CPU {cpu}")
    a = np.array(out, dtype=np.int64)
    return Timeline(list(names), a[:, 0], a[:, 1], a[:, 2], span, f"{path} (CPU {cpu})")


def synthetic(rate_hz: float, dur_ns: float) -> Timeline:
    period = 1e9 / rate_hz
    if dur_ns >= period:
        raise JitterscopeError(
            f"--os-duration ({dur_ns / 1e3:g} us) must be shorter than the period of --os-rate ({period / 1e3:g} us)"
        )
    return Timeline(
        ["synthetic"],
        np.array([0]),
        np.array([int(dur_ns)]),
        np.array([0]),
        period,
        f"synthetic: {rate_hz:g}/s x {dur_ns / 1e3:g} us",
    )


def bursts(
    tl: Timeline, n_accesses: int, access_ns: float, footprint: int, only: int | None = None
) -> tuple[Bursts, list[tuple[int, int, int]]]:
    """Bursts over a trace of n_accesses (the timeline repeated), and the sources' (base, lines, write_every)."""
    lines = max(footprint // LINE, 1)
    reps = int(np.ceil(n_accesses * access_ns / tl.span_ns))
    starts = (tl.start_ns[None, :] + tl.span_ns * np.arange(reps)[:, None]).ravel()
    pos = (starts / access_ns).astype(np.int64)
    length = np.minimum(np.maximum(np.tile(tl.dur_ns, reps) / access_ns, 1), 2 * lines).astype(np.int64)
    src = np.tile(tl.src, reps)
    keep = pos < n_accesses
    if only is not None:
        keep &= src == only
    srcs = [(KERNEL_BASE + (i << 32), lines, WRITE_EVERY) for i in range(len(tl.names))]
    return Bursts(pos[keep].astype(np.uint64), src[keep].astype(np.uint32), length[keep].astype(np.uint64)), srcs
