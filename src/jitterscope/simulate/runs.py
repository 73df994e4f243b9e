"""Noise timelines and per-phase delays from a run directory."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jitterscope.errors import JitterscopeError
from jitterscope.measure.peers import SELF_SUFFIX
from jitterscope.rundir import Run, load_run
from jitterscope.simulate.timeline import Timeline


@dataclass
class RunNoise:
    """A run's detours as arrays, plus what a timeline needs.

    `cpu` holds each detour's timeline key: its CPU for a single-machine run, the
    node's index for a cluster run (each node its own timeline, `labels[i]` = host:cpu).
    Rows are in detours.parquet order (node after node), so `attribution()` can index them."""

    run: Run
    cpu: np.ndarray
    start_ns: np.ndarray
    duration_ns: np.ndarray
    period_ns: float
    cpus: list[int]
    labels: list[str] = field(default_factory=list)
    _parts: list[tuple[Run, np.ndarray]] = field(default_factory=list, repr=False)

    @property
    def where(self) -> str:
        """'CPUs 1,3' or 'nodes a:1,b:1' (what the timelines are)."""
        if self.labels:
            return f"nodes {','.join(self.labels)}"
        return f"CPUs {','.join(map(str, self.cpus))}"

    def timelines(self, duration_ns: np.ndarray | None = None) -> list[Timeline]:
        """One timeline per probed CPU or node (optionally with replaced detour durations)."""
        d = self.duration_ns if duration_ns is None else duration_ns
        out = []
        for i, c in enumerate(self.cpus):
            sel = self.cpu == c
            label = self.labels[i] if self.labels else f"cpu{c}"
            try:
                out.append(Timeline(self.period_ns, self.start_ns[sel], d[sel], label=label))
            except ValueError:
                raise JitterscopeError(f"{self.run.path}: {label} was never free of noise; nothing to replay") from None
        return out

    def attribution(self) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
        """(detour row in these arrays, ns, kind, name) of every attribution row, over all nodes."""
        det, ns, kinds, names = [], [], [], []
        for run, rows in self._parts:
            att = run.attribution
            d = att.column("detour").to_numpy(zero_copy_only=False).astype(np.int64)
            if d.max(initial=-1) >= len(rows) or d.min(initial=0) < 0:
                raise JitterscopeError(f"{run.path}: attribution refers to detours that do not exist")
            keep = rows[d] >= 0  # detours past the replayed period were left out
            det.append(rows[d][keep])
            ns.append(att.column("ns").to_numpy(zero_copy_only=False).astype(np.float64)[keep])
            kinds += [k for k, ok in zip(att.column("kind").to_pylist(), keep) if ok]
            names += [n for n, ok in zip(att.column("name").to_pylist(), keep) if ok]
        return (
            np.concatenate(det) if det else np.zeros(0, np.int64),
            np.concatenate(ns) if ns else np.zeros(0),
            kinds,
            names,
        )


def load_noise(path: str) -> RunNoise:
    """Open a run (a cluster run: one timeline per node) and read its detours; one-line errors."""
    run = load_run(path, kinds=("measure", "cluster"), purpose="a noise timeline (simulate, fit)")
    try:
        period_ns = float(run.meta["duration_s"]) * 1e9
    except (KeyError, TypeError, ValueError):
        raise JitterscopeError(f"{run.path}: meta.json has no usable duration_s") from None
    if not period_ns > 0:
        raise JitterscopeError(f"{run.path}: run duration is {period_ns / 1e9:g} s; nothing to replay")
    nodes = run.node_runs()
    cluster = nodes[0][1] is not run
    cols: list[list[np.ndarray]] = [[], [], []]
    parts, labels, n = [], [], 0
    for i, (label, r) in enumerate(nodes):
        cpu, start_ns, dur_ns = r.detour_arrays()
        start, dur = start_ns.astype(np.float64), dur_ns.astype(np.float64)
        # a cluster replays every node over the shortest node's duration (meta.duration_s)
        keep = (start + dur <= period_ns) if cluster else np.ones(len(cpu), bool)
        rows = np.full(len(cpu), -1, np.int64)
        rows[keep] = n + np.arange(int(keep.sum()))
        n += int(keep.sum())
        cols[0].append(np.full(int(keep.sum()), i) if cluster else cpu[keep])
        cols[1].append(start[keep])
        cols[2].append(dur[keep])
        parts.append((r, rows))
        labels.append(label)
    cpu, start, dur = (np.concatenate(c) for c in cols)
    cpus = list(range(len(nodes))) if cluster else sorted(set(run.cpus) | set(np.unique(cpu).tolist()))
    if not cpus:
        raise JitterscopeError(f"{run.path}: the run probed no CPUs")
    return RunNoise(run, cpu, start, dur, period_ns, cpus, labels if cluster else [], parts)


def phase_delays(timelines: list[Timeline], phase_ns: float) -> np.ndarray:
    """Per-phase delays (ns) of back-to-back phases of `phase_ns` work on each timeline.

    Phase k on a CPU ends at A^-1(k W) (work-conserving, as in the trace engine);
    its delay is its length minus W.  Only whole phases inside the run count."""
    out = []
    for tl in timelines:
        count = int(tl.work_per_period // phase_ns)
        if count < 1:
            continue
        ends, _ = tl.time_of(np.arange(1, count + 1) * phase_ns)
        lengths = np.diff(np.concatenate([[0.0], ends]))
        out.append(np.maximum(lengths - phase_ns, 0.0))
    return np.concatenate(out) if out else np.zeros(0)


def source_cuts(noise: RunNoise) -> list[tuple[str, str, np.ndarray, int]]:
    """For each attributed source: (kind, name, ns to remove from each detour, total ns).
    The measuring jitterscope's own threads (" (jitterscope)") are not ranked: they run only
    while measuring, so removing them is nothing a user can do to the system.

    A detour's time is split among sources in attribution.parquet (each ns counted
    once); removing a source subtracts its share from every detour it touched."""
    run = noise.run
    if not run.tracing:
        reason = run.meta.get("tracing", {}).get("reason") or "tracing was off"
        raise JitterscopeError(
            f"{run.path}: the run has no attribution ({reason}); --by-source needs a run measured with kernel tracing"
        )
    det, ns, kinds, names = noise.attribution()
    if len(det) == 0:
        raise JitterscopeError(f"{run.path}: the attribution table is empty; --by-source has no sources to remove")
    keys = np.array([f"{k}\x00{n}" for k, n in zip(kinds, names)], dtype=object)
    uniq, code = np.unique(keys, return_inverse=True)
    out = []
    for i, key in enumerate(uniq):
        kind, name = str(key).split("\x00", 1)
        if name.endswith(SELF_SUFFIX):  # the measuring tool's own overhead is not the system's to fix
            continue
        sel = code == i
        cut = np.bincount(det[sel], weights=ns[sel], minlength=len(noise.duration_ns))
        out.append((kind, name, cut, int(ns[sel].sum())))
    out.sort(key=lambda x: -x[3])
    return out
