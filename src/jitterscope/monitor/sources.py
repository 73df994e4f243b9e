"""Each source's figures per CPU for one window: what the per-source metrics export.

Built from the window's attribution (one row per detour and source), after the
labels are folded (labels.py), so a folded label's figures are those of all the
sources it stands for: its detours counted once, its period fitted on all their
occurrences.  The rate counts the times a source *ran* inside detours (its
activity intervals, from the trace), not the detours it took part in: when the
probe is kept off its CPU long enough for a daemon to wake twice in one detour,
that is still two wake-ups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jitterscope.measure.periodicity import detect_period
from jitterscope.monitor.labels import LabelCap, identity
from jitterscope.rundir import Run


@dataclass(frozen=True)
class CpuSource:
    cpu: int
    kind: str
    name: str
    detours: int  # detours on this CPU it took time in
    runs: int  # times it ran inside them (activity intervals; its detours where the trace has none)
    total_ns: int  # its time inside them
    max_ns: int  # its longest time in one detour
    period_s: float | None  # recurrence period when regular
    duration_s: float  # the window's measured time

    @property
    def share(self) -> float:
        """Fraction of the CPU's measured time the source took (a daemon busy B every P: B/P)."""
        return self.total_ns / (self.duration_s * 1e9) if self.duration_s > 0 else 0.0

    @property
    def rate_hz(self) -> float:
        """Times it ran inside detours, per second (a daemon waking every P: 1/P)."""
        return self.runs / self.duration_s if self.duration_s > 0 else 0.0


def cpu_sources(run: Run, labels: LabelCap) -> list[CpuSource]:
    """The window's sources per CPU under their labels, most time first."""
    if not run.has_table("attribution"):
        return []
    att = run.attribution
    if att.num_rows == 0:
        return []
    d_cpu, d_start, d_dur = run.detour_arrays()
    a_det = att.column("detour").to_numpy()
    a_cpu = att.column("cpu").to_numpy()
    a_ns = att.column("ns").to_numpy()
    when = d_start[a_det] + att.column("offset_ns").to_numpy()
    pairs = np.asarray(att.column("kind").to_pylist(), dtype=object) + "\x1f"
    pairs = pairs + np.asarray(att.column("name").to_pylist(), dtype=object)
    uniq, inv = np.unique(pairs, return_inverse=True)
    keys = [identity(*str(u).split("\x1f", 1)) for u in uniq]
    time_of: dict[tuple[str, str], float] = {}
    for k, ns in zip(keys, np.bincount(inv, weights=a_ns, minlength=len(uniq))):
        time_of[k] = time_of.get(k, 0.0) + float(ns)
    label = labels.assign(sorted(time_of, key=lambda k: -time_of[k]))
    label_names = sorted(set(label.values()))
    code = {k: i for i, k in enumerate(label_names)}
    # One sort by (CPU, label) and a split: each group is a contiguous slice (no pass per group).
    group = a_cpu.astype(np.int64) * len(label_names) + np.array([code[label[k]] for k in keys], dtype=np.int64)[inv]
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    runs = _runs(run, {k: code[label[k]] for k in keys}, len(label_names), d_cpu, d_start, d_dur)
    duration_s = run.duration_ns / 1e9
    out = []
    for rows in np.split(order, bounds):
        g = int(group[rows[0]])
        kind, name = label_names[g % len(label_names)]
        dets, per_det = np.unique(a_det[rows], return_inverse=True)
        per_ns = np.bincount(per_det, weights=a_ns[rows])  # folded names may share a detour
        out.append(
            CpuSource(
                cpu=g // len(label_names),
                kind=kind,
                name=name,
                detours=len(dets),
                runs=runs.get(g, len(dets)),
                total_ns=int(a_ns[rows].sum()),
                max_ns=int(per_ns.max()),
                period_s=detect_period(when[rows]),
                duration_s=duration_s,
            )
        )
    return sorted(out, key=lambda s: (-s.total_ns, s.cpu))


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    enc = pc.dictionary_encode(column.combine_chunks())
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), [str(v) for v in enc.dictionary.to_pylist()]


def _runs(
    run: Run,
    label_of: dict[tuple[str, str], int],
    n_labels: int,
    d_cpu: np.ndarray,
    d_start: np.ndarray,
    d_dur: np.ndarray,
) -> dict[int, int]:
    """Activity intervals that overlap a detour on their CPU, per (CPU x n_labels + label) group."""
    if not run.has_table("activity") or run.activity.num_rows == 0:
        return {}
    act = run.activity
    ki, kd = _codes(act.column("kind"))
    ni, nd = _codes(act.column("name"))
    pair = ki * max(len(nd), 1) + ni
    present, inv = np.unique(pair, return_inverse=True)
    # -1: annotations (work, timer) and tasks that never took detour time (the probe itself)
    lookup = np.array(
        [label_of.get(identity(kd[p // max(len(nd), 1)], nd[p % max(len(nd), 1)]), -1) for p in present],
        dtype=np.int64,
    )
    lab = lookup[inv]
    a_cpu = act.column("cpu").to_numpy().astype(np.int64)
    a_start = act.column("start_ns").to_numpy()
    a_end = act.column("end_ns").to_numpy()
    inside = np.zeros(len(lab), dtype=bool)
    for c in np.unique(d_cpu):
        on = np.flatnonzero((a_cpu == c) & (lab >= 0))
        starts = d_start[d_cpu == c]  # sorted and disjoint on one CPU
        ends = starts + d_dur[d_cpu == c]
        last = np.searchsorted(starts, a_end[on], side="left") - 1  # the last detour starting before it ends
        inside[on] = (last >= 0) & (ends[np.maximum(last, 0)] > a_start[on])
    groups, counts = np.unique(a_cpu[inside] * n_labels + lab[inside], return_counts=True)
    return {int(g): int(n) for g, n in zip(groups, counts)}
