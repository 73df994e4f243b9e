"""What `compare` needs from a run, restricted to chosen CPUs, and poolable.

A `Sample` holds per source the time it took in each detour it appeared in
(its occurrences), the exposure (measured CPU-time), and per CPU the noise in
equal time blocks.  Samples of several runs pool by concatenation, which is how
`monitor` builds a baseline from its first windows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitterscope.errors import JitterscopeError
from jitterscope.rundir import Run

BLOCK_NS = 100_000_000  # 100 ms blocks for the per-CPU total test...
MAX_BLOCKS = 50  # ...but no more than this many per run...
MIN_BLOCKS = 3  # ...nor fewer.

_KWORKER = re.compile(r"^(kworker/(?:u)?\d+):\d+(H?)(?:-.*)?$")

Key = tuple[str, str]


def source_key(kind: str, name: str) -> Key:
    """Identity of a source across runs: kworker ids change from boot to boot
    (`kworker/1:2` then `kworker/1:0`), so they compare as `kworker/1:*`."""
    if kind == "thread":
        m = _KWORKER.match(name)
        if m:
            return kind, f"{m.group(1)}:*{m.group(2)}"
    return kind, name


@dataclass
class Sample:
    cpus: list[int]
    exposure_ns: float  # measured CPU-time: duration x CPUs, summed over runs
    occurrences: dict[Key, np.ndarray]  # ns the source took in each detour it appeared in
    cells: dict[Key, np.ndarray]  # (cpu, time block) cell of each occurrence
    n_cells: int  # cells in all: blocks x CPUs, summed over runs
    names: dict[Key, set[str]]  # raw names seen under a key
    noise_ns: dict[int, float]
    detours: dict[int, int]
    cpu_exposure_ns: dict[int, float]
    blocks_ppm: dict[int, np.ndarray]
    tracing: bool
    ids: list[str] = field(default_factory=list)

    def block_counts(self, key: Key) -> np.ndarray:
        """Occurrences of a source per (CPU, time block) cell."""
        return np.bincount(self.cells.get(key, np.zeros(0, np.int64)), minlength=self.n_cells).astype(float)

    def ppm(self, cpu: int) -> float:
        t = self.cpu_exposure_ns.get(cpu, 0.0)
        return self.noise_ns.get(cpu, 0.0) / t * 1e6 if t > 0 else 0.0


def from_run(run: Run, cpus: list[int], min_ns: float = 0.0, block_ns: float | None = None) -> Sample:
    """The run's sample on `cpus`; detours shorter than `min_ns` left out (with their attribution);
    per-CPU totals in blocks of `block_ns` (default: the run's duration in MIN..MAX_BLOCKS blocks)."""
    dur = float(run.duration_ns)
    if dur <= 0:  # rates per second of nothing: a run cut short before it measured, or hand-edited
        raise JitterscopeError(
            f"{run.path / 'meta.json'}: duration_s is {run.meta['duration_s']}; compare needs a run that measured time"
        )
    d_cpu, d_start, d_dur = run.detour_arrays()
    short = d_dur < min_ns
    if block_ns is None:
        nb = int(min(MAX_BLOCKS, max(MIN_BLOCKS, dur // BLOCK_NS)))
        block_ns = dur / nb
    else:
        nb = max(1, round(dur / block_ns))
    d_cpu = np.where(short, -1, d_cpu)  # a left-out detour belongs to no CPU
    noise, count, blocks, expo = {}, {}, {}, {}
    for c in cpus:
        sel = d_cpu == c
        noise[c] = float(d_dur[sel].sum())
        count[c] = int(sel.sum())
        expo[c] = dur
        b = np.minimum((d_start[sel] / block_ns).astype(np.int64), nb - 1)
        blocks[c] = np.bincount(b, weights=d_dur[sel], minlength=nb) / block_ns * 1e6
    att = run.attribution
    a_cpu = att.column("cpu").to_numpy()
    keep = np.isin(a_cpu, cpus)
    if short.any():
        keep &= ~short[np.clip(att.column("detour").to_numpy(), 0, max(len(short) - 1, 0))]
    a_det = att.column("detour").to_numpy()[keep]
    cpu_index = {c: i for i, c in enumerate(cpus)}
    a_cell = (
        (
            np.array([cpu_index[int(c)] for c in a_cpu[keep]], dtype=np.int64) * nb
            + np.minimum((d_start[a_det] / block_ns).astype(np.int64), nb - 1)
        )
        if len(a_det)
        else a_det
    )
    kinds = np.asarray(att.column("kind").to_pylist(), dtype=object)[keep]
    names = np.asarray(att.column("name").to_pylist(), dtype=object)[keep]
    ns = att.column("ns").to_numpy()[keep]
    occ: dict[Key, list[np.ndarray]] = {}
    cell: dict[Key, list[np.ndarray]] = {}
    raw: dict[Key, set[str]] = {}
    if len(ns):
        pairs = kinds + "\x1f" + names
        uniq, inv = np.unique(pairs, return_inverse=True)
        for i, u in enumerate(uniq):
            k, n = str(u).split("\x1f", 1)
            key = source_key(k, n)
            occ.setdefault(key, []).append(ns[inv == i])
            cell.setdefault(key, []).append(a_cell[inv == i])
            raw.setdefault(key, set()).add(n)
    return Sample(
        cpus=list(cpus),
        exposure_ns=dur * len(cpus),
        occurrences={k: np.concatenate(v) for k, v in occ.items()},
        names=raw,
        cells={k: np.concatenate(v) for k, v in cell.items()},
        n_cells=nb * len(cpus),
        noise_ns=noise,
        detours=count,
        cpu_exposure_ns=expo,
        blocks_ppm=blocks,
        tracing=run.tracing,
        ids=[str(run.meta.get("id"))],
    )


def pool(samples: list[Sample]) -> Sample:
    """One sample from several runs of the same CPUs (exposures add up)."""
    if len(samples) == 1:
        return samples[0]
    cpus = sorted(set().union(*[set(s.cpus) for s in samples]))
    occ: dict[Key, list[np.ndarray]] = {}
    cell: dict[Key, list[np.ndarray]] = {}
    raw: dict[Key, set[str]] = {}
    offset = 0
    for s in samples:
        for k, v in s.occurrences.items():
            occ.setdefault(k, []).append(v)
            cell.setdefault(k, []).append(s.cells[k] + offset)
            raw.setdefault(k, set()).update(s.names[k])
        offset += s.n_cells

    def add(attr: str) -> dict[int, Any]:  # ints (detours) or floats (ns)
        return {c: sum(getattr(s, attr).get(c, 0) for s in samples) for c in cpus}

    return Sample(
        cpus=cpus,
        exposure_ns=sum(s.exposure_ns for s in samples),
        occurrences={k: np.concatenate(v) for k, v in occ.items()},
        names=raw,
        cells={k: np.concatenate(v) for k, v in cell.items()},
        n_cells=offset,
        noise_ns=add("noise_ns"),
        detours=add("detours"),
        cpu_exposure_ns=add("cpu_exposure_ns"),
        blocks_ppm={c: np.concatenate([s.blocks_ppm[c] for s in samples if c in s.blocks_ppm]) for c in cpus},
        tracing=all(s.tracing for s in samples),
        ids=[i for s in samples for i in s.ids],
    )
