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
    time_of: dict[tuple[str, str], int] = {}
    for i, k in enumerate(keys):
        time_of[k] = time_of.get(k, 0) + int(a_ns[inv == i].sum())
    label = labels.assign(sorted(time_of, key=lambda k: -time_of[k]))
    label_names = sorted(set(label.values()))
    code = {k: i for i, k in enumerate(label_names)}
    row_label = np.array([code[label[k]] for k in keys], dtype=np.int64)[inv]
    duration_s = run.duration_ns / 1e9
    out = []
    for c in np.unique(a_cpu):
        on_cpu = a_cpu == c
        for li in np.unique(row_label[on_cpu]):
            sel = on_cpu & (row_label == li)
            kind, name = label_names[li]
            dets, per_det = np.unique(a_det[sel], return_inverse=True)
            per_ns = np.bincount(per_det, weights=a_ns[sel])  # folded names may share a detour
            out.append(
                CpuSource(
                    cpu=int(c),
                    kind=kind,
                    name=name,
                    detours=len(dets),
                    total_ns=int(a_ns[sel].sum()),
                    max_ns=int(per_ns.max()),
                    period_s=detect_period(when[sel]),
                    duration_s=duration_s,
                )
            )
    return sorted(out, key=lambda s: (-s.total_ns, s.cpu))
