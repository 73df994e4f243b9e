"""Each source's own events in the measured window, beside the detours it took part in.

A detour can hold several occurrences of one source (two timer ticks inside a
long preemption) and most occurrences of a short source hold no detour above the
threshold, so the detours a source took part in are not its rate.  The kernel's
rate is the count of the source's entries the trace saw: an IRQ's or softirq's
entry, an NMI, a task switched in.  Only entries seen inside each CPU's measured
window count; an activity the trace opened at the capture's start (its entry
came before the trace: `clipped` at the start) or a switch the kernel did not
record (repaired, traceparse.c) is no event, as for a kernel counter
(`perf stat -e irq:irq_handler_entry,...`) over the same window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OWNING_KINDS = ("thread", "irq", "softirq", "nmi")  # annotations (work, timer) are not events of a source


@dataclass
class SourceEvents:
    """Per source code (index into Attribution.sources): events in the window and the CPUs they hit."""

    counts: np.ndarray  # int64, one per source code; index 0 (unexplained) stays 0
    cpus: list[list[int]]
    exposure_s: float  # measured seconds summed over the probed CPUs: a rate is per CPU


def count_events(
    codes: np.ndarray,
    kinds: np.ndarray,
    cpu: np.ndarray,
    start_ns: np.ndarray,
    entered: np.ndarray,
    windows: dict[int, tuple[float, float]],
    n_sources: int,
) -> SourceEvents:
    """Count activity rows that are a source's entry inside its CPU's window.

    `codes` maps each activity row to its source (source_table), `entered` is False for a
    row whose entry the trace did not see, `windows` is {cpu: (first_ns, last_ns)} of the probe."""
    codes = np.asarray(codes, dtype=np.int64)
    cpu = np.asarray(cpu)
    start_ns = np.asarray(start_ns, dtype=np.int64)
    keep = (codes != 0) & np.asarray(entered, dtype=bool) & np.isin(np.asarray(kinds, dtype=object), OWNING_KINDS)
    inside = np.zeros(len(codes), dtype=bool)
    for c, (lo, hi) in windows.items():
        inside |= (cpu == c) & (start_ns >= lo) & (start_ns <= hi)
    sel = keep & inside
    counts = np.bincount(codes[sel], minlength=n_sources).astype(np.int64)
    pairs = np.unique(np.stack([codes[sel], cpu[sel].astype(np.int64)]), axis=1) if sel.any() else np.zeros((2, 0))
    cpus: list[list[int]] = [[] for _ in range(n_sources)]
    for code, c in pairs.T:
        cpus[int(code)].append(int(c))
    exposure = sum(max(0.0, hi - lo) for lo, hi in windows.values()) / 1e9
    return SourceEvents(counts, cpus, exposure)
