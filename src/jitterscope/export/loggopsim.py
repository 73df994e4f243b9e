"""LogGOPSim noise traces: one line per detour, `start<TAB>duration` in ns.

LogGOPSim (Hoefler, Schneider & Lumsdaine, "LogGOPSim - Simulating
Large-Scale Applications in the LogGOPS Model", HPDC/LSAP 2010; noise
injection in "Characterizing the Influence of System Noise on Large-Scale
Applications by Simulation", SC 2010) replays a measured noise trace per
simulated process: each detour delays the process at its start time by its
duration.  Lines starting with `#` are comments.  A trace is one CPU's
timeline, so a multi-CPU run gives one file per CPU (FILE.cpuN.ext), and a
cluster run one file per node (FILE.HOST.cpuN.ext).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from jitterscope import boundedio
from jitterscope.atomic import atomic_open
from jitterscope.errors import JitterscopeError
from jitterscope.kinds import Exported
from jitterscope.rundir import Run


def write_loggopsim(run: Run, out: Path, cpu: int | None = None) -> Exported:
    nodes = run.node_runs()
    cluster = nodes[0][1] is not run
    cpus = sorted({c for _, r in nodes for c in r.cpus})
    if cpu is not None and cpu not in cpus:
        raise JitterscopeError(f"CPU {cpu} was not measured in this run (CPUs {cpus})")
    targets = [
        (r, c, f"{re.sub(r'[^A-Za-z0-9._-]', '_', str(r.meta.get('host')))}.cpu{c}" if cluster else f"cpu{c}")
        for _, r in nodes
        for c in r.cpus
        if cpu is None or c == cpu
    ]
    files, count = [], 0
    for r, c, tag in targets:
        path = out if len(targets) == 1 else out.with_name(f"{out.stem}.{tag}{out.suffix}")
        count += _write_one(r, c, path)
        files.append(str(path))
    return {"format": "loggopsim", "files": files, "detours": count}


def _write_one(run: Run, c: int, path: Path) -> int:
    _, d_start, d_dur = run.detour_arrays(cpu=c)
    threshold = int(float((run.meta.get("options") or {}).get("threshold_ns") or 0))
    header = [
        "# LogGOPSim noise trace written by jitterscope",
        f"# run {run.meta.get('id')} host {run.meta.get('host')} kernel {run.meta.get('kernel')}",
        f"# cpu {c}; duration {run.duration_ns} ns; threshold {threshold} ns",
        f"# detours {len(d_dur)}; noise {int(d_dur.sum())} ns",
        "# start_ns\tduration_ns",
    ]
    rows = [f"{a}\t{b}" for a, b in zip(d_start.astype(np.int64).tolist(), d_dur.astype(np.int64).tolist())]
    with atomic_open(path, "w") as f:
        # No newline after the last line: LogGOPSim reads a final empty line as one more detour
        # made of uninitialised values.
        f.write("\n".join(header + rows))
    return len(d_dur)


def read_loggopsim(path: Path) -> np.ndarray:
    """(start_ns, duration_ns) rows of a noise trace; `#` lines skipped."""
    rows = []
    for n, line in enumerate(boundedio.read_text(path, "noise trace", boundedio.table_cap()).splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise JitterscopeError(f"{path}:{n}: expected start<TAB>duration, got {line!r}")
        rows.append((int(parts[0]), int(parts[1])))
    return np.array(rows, dtype=np.int64).reshape(-1, 2)
