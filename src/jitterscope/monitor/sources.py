"""Each source's figures per CPU for one window: what the per-source metrics export.

Built from the window's attribution (one row per detour and source), after the
labels are folded (labels.py), so a folded label's figures are those of all the
sources it stands for: its detours counted once, its period fitted on all their
occurrences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitterscope.measure.periodicity import detect_period
from jitterscope.monitor.labels import LabelCap, identity
from jitterscope.rundir import Run


@dataclass(frozen=True)
class CpuSource:
    cpu: int
    kind: str
    name: str
    detours: int  # detours on this CPU it took time in
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
        """Detours it took time in, per second (a daemon waking every P: 1/P)."""
        return self.detours / self.duration_s if self.duration_s > 0 else 0.0


def cpu_sources(run: Run, labels: LabelCap) -> list[CpuSource]:
    """The window's sources per CPU under their labels, most time first."""
    if not run.has_table("attribution"):
        return []
    att = run.attribution
    if att.num_rows == 0:
        return []
    _, d_start, _ = run.detour_arrays()
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
                total_ns=int(a_ns[rows].sum()),
                max_ns=int(per_ns.max()),
                period_s=detect_period(when[rows]),
                duration_s=duration_s,
            )
        )
    return sorted(out, key=lambda s: (-s.total_ns, s.cpu))
