"""Noise timelines and per-phase delays from a run directory."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitterscope.errors import JitterscopeError
from jitterscope.rundir import Run, load_run
from jitterscope.simulate.timeline import Timeline


@dataclass
class RunNoise:
    """A run's detours as arrays (detours.parquet row order, so attribution rows
    can index them), plus what a timeline needs."""

    run: Run
    cpu: np.ndarray
    start_ns: np.ndarray
    duration_ns: np.ndarray
    period_ns: float
    cpus: list[int]

    def timelines(self, duration_ns: np.ndarray | None = None) -> list[Timeline]:
        """One timeline per probed CPU (optionally with replaced detour durations)."""
        d = self.duration_ns if duration_ns is None else duration_ns
        out = []
        for c in self.cpus:
            sel = self.cpu == c
            try:
                out.append(Timeline(self.period_ns, self.start_ns[sel], d[sel], label=f"cpu{c}"))
            except ValueError:
                raise JitterscopeError(f"{self.run.path}: CPU {c} was never free of noise; nothing to replay") from None
        return out


def load_noise(path: str) -> RunNoise:
    """Open a run and read its detours; one-line errors for anything unusable."""
    run = load_run(path)
    try:
        period_ns = float(run.meta["duration_s"]) * 1e9
    except (KeyError, TypeError, ValueError):
        raise JitterscopeError(f"{run.path}: meta.json has no usable duration_s") from None
    if not period_ns > 0:
        raise JitterscopeError(f"{run.path}: run duration is {period_ns / 1e9:g} s; nothing to replay")
    t = run.detours
    cpu = t.column("cpu").to_numpy(zero_copy_only=False).astype(np.int64)
    start = t.column("start_ns").to_numpy(zero_copy_only=False).astype(np.float64)
    dur = t.column("duration_ns").to_numpy(zero_copy_only=False).astype(np.float64)
    cpus = sorted(set(run.cpus) | set(np.unique(cpu).tolist()))
    if not cpus:
        raise JitterscopeError(f"{run.path}: the run probed no CPUs")
    return RunNoise(run, cpu, start, dur, period_ns, cpus)


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

    A detour's time is split among sources in attribution.parquet (each ns counted
    once); removing a source subtracts its share from every detour it touched."""
    run = noise.run
    if not run.tracing:
        reason = run.meta.get("tracing", {}).get("reason") or "tracing was off"
        raise JitterscopeError(f"{run.path}: the run has no attribution ({reason}); --by-source needs a run "
                               f"measured with kernel tracing")
    att = run.attribution
    if att.num_rows == 0:
        raise JitterscopeError(f"{run.path}: attribution.parquet is empty; --by-source has no sources to remove")
    det = att.column("detour").to_numpy(zero_copy_only=False).astype(np.int64)
    ns = att.column("ns").to_numpy(zero_copy_only=False).astype(np.float64)
    kinds = att.column("kind").to_pylist()
    names = att.column("name").to_pylist()
    if det.max(initial=-1) >= len(noise.duration_ns) or det.min(initial=0) < 0:
        raise JitterscopeError(f"{run.path}: attribution.parquet refers to detours that do not exist")
    keys = np.array([f"{k}\x00{n}" for k, n in zip(kinds, names)], dtype=object)
    uniq, code = np.unique(keys, return_inverse=True)
    out = []
    for i, key in enumerate(uniq):
        sel = code == i
        cut = np.bincount(det[sel], weights=ns[sel], minlength=len(noise.duration_ns))
        kind, name = str(key).split("\x00", 1)
        out.append((kind, name, cut, int(ns[sel].sum())))
    out.sort(key=lambda x: -x[3])
    return out
