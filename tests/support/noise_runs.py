"""Write small run directories from synthetic noise timelines with known sources
(for tests, benchmarks and documentation of simulate/fit).

`periodic_source(...)` makes one source's detours; `write_noise_run(...)` merges
sources per CPU (coinciding detours become one detour whose time is split among
its sources, as attribution.parquet does) and writes meta.json, summary.json,
detours.parquet and (when traced) attribution.parquet and activity.parquet
(each source's occurrences as kernel activity) through `jitterscope.rundir`.
summary.json comes from the real builder (`measure.build.make_summary`), so it
has every field a measured run's has.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from jitterscope.measure.attribution import UNEXPLAINED, Attribution, attribute
from jitterscope.measure.build import make_summary
from jitterscope.rundir import base_meta, create_run_dir, write_json, write_table


@dataclass
class Source:
    kind: str
    name: str
    cpu: int
    starts_ns: np.ndarray
    durations_ns: np.ndarray


def periodic_source(
    kind: str,
    name: str,
    cpu: int,
    period_ns: float,
    duration_ns: float,
    run_ns: float,
    phase_ns: float = 0.0,
    jitter_ns: float = 0.0,
    seed: int = 0,
) -> Source:
    """A detour of duration_ns every period_ns, first at phase_ns, optionally jittered."""
    rng = np.random.default_rng(seed)
    starts = np.arange(phase_ns, run_ns - duration_ns, period_ns)
    if jitter_ns:
        starts = np.clip(starts + rng.uniform(-jitter_ns, jitter_ns, len(starts)), 0, run_ns - duration_ns)
    return Source(kind, name, cpu, starts.astype(np.int64), np.full(len(starts), int(duration_ns), np.int64))


def write_noise_run(
    path: str | Path, sources: list[Source], duration_s: float, cpus: list[int] | None = None, tracing: bool = True
) -> Path:
    """Write a run directory whose detours are the union of `sources` (ns since run start)."""
    run_dir = create_run_dir(path)
    cpus = sorted(set(cpus or []) | {s.cpu for s in sources}) or [1]
    det_rows: list[tuple[int, int, int]] = []
    att_rows: list[tuple[int, int, str, str, int, int]] = []
    act_rows: list[tuple[int, int, int, str, str]] = []
    for cpu in cpus:
        pieces = []  # (start, end, kind, name)
        for s in sources:
            if s.cpu == cpu:
                pieces += [(int(a), int(a + d), s.kind, s.name) for a, d in zip(s.starts_ns, s.durations_ns)]
        pieces.sort()
        act_rows += [(cpu, a, b, k, n) for a, b, k, n in pieces]
        # merge overlapping pieces into detours; a later piece's time starts where the
        # detour so far ends (each ns counted once, to one source)
        i = 0
        while i < len(pieces):
            start, end, kind, name = pieces[i]
            parts = [(kind, name, end - start, 0)]
            j = i + 1
            while j < len(pieces) and pieces[j][0] <= end:
                a, b, k2, n2 = pieces[j]
                if b > end:
                    parts.append((k2, n2, b - end, end - start))
                    end = b
                j += 1
            idx = len(det_rows)
            det_rows.append((cpu, start, end - start))
            agg: dict[tuple[str, str], list[int]] = {}
            for k2, n2, ns, off in parts:
                cur = agg.setdefault((k2, n2), [0, off])
                cur[0] += ns
            for (k2, n2), (ns, off) in agg.items():
                att_rows.append((idx, cpu, k2, n2, ns, off))
            i = j
    det = np.array(det_rows, dtype=np.int64).reshape(-1, 3)
    write_table(run_dir, "detours", pa.table({"cpu": det[:, 0], "start_ns": det[:, 1], "duration_ns": det[:, 2]}))
    if tracing:
        write_table(
            run_dir,
            "attribution",
            pa.table(
                {
                    "detour": [r[0] for r in att_rows],
                    "cpu": [r[1] for r in att_rows],
                    "kind": [r[2] for r in att_rows],
                    "name": [r[3] for r in att_rows],
                    "ns": [r[4] for r in att_rows],
                    "offset_ns": [r[5] for r in att_rows],
                }
            ),
        )
        write_table(
            run_dir,
            "activity",
            pa.table(
                {
                    "cpu": [r[0] for r in act_rows],
                    "start_ns": [r[1] for r in act_rows],
                    "end_ns": [r[2] for r in act_rows],
                    "kind": pa.array([r[3] for r in act_rows], pa.string()),
                    "name": pa.array([r[4] for r in act_rows], pa.string()),
                    "depth": [0 if r[3] == "thread" else 1 for r in act_rows],
                    "detail": pa.array([""] * len(act_rows), pa.string()),
                }
            ),
        )
    dur_ns = duration_s * 1e9
    meta = base_meta(
        kind="measure",
        id=run_dir.name,
        host="synthetic",
        kernel="synthetic",
        command_line=["synthetic"],
        start="2026-01-01T00:00:00+00:00",
        start_unix_ns=0,
        duration_s=duration_s,
        interrupted=False,
        cpus=cpus,
        cpu_model="synthetic",
        clocksource="tsc",
        virtualization=None,
        options={"threshold_ns": 1000},
        tracing={
            "enabled": tracing,
            "reason": None if tracing else "disabled with --no-trace",
            "clock": "x86-tsc" if tracing else None,
            "buffer_kb": None,
            "events": len(att_rows),
        },
        lost_events=0,
        tsc_hz=1e9,
        t0_tsc=0,
        probe={},
        steal_ns=0.0,
    )
    att = _attribution(att_rows if tracing else [], det)
    summary = make_summary(
        meta,
        att,
        det[:, 0].astype(np.int32),
        det[:, 1],
        det[:, 2],
        {c: dur_ns for c in cpus},
        {c: 10.0 for c in cpus},
        {},
    )
    write_json(run_dir / "meta.json", meta)
    write_json(run_dir / "summary.json", summary)
    return run_dir


def _attribution(rows: list[tuple[int, int, str, str, int, int]], det: np.ndarray) -> Attribution:
    """The attribution of `rows` (detour, cpu, kind, name, ns, offset); untraced, as measure
    builds it: every detour wholly unexplained."""
    if not rows:
        return attribute(
            det[:, 0].astype(np.int32),
            det[:, 1],
            det[:, 2],
            np.zeros(0, np.int32),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.int32),
            [UNEXPLAINED],
        )
    sources = [UNEXPLAINED] + sorted({(r[2], r[3]) for r in rows} - {UNEXPLAINED})
    code = {s: i for i, s in enumerate(sources)}
    return Attribution(
        np.array([r[0] for r in rows], np.int64),
        np.array([code[(r[2], r[3])] for r in rows], np.int32),
        np.array([r[4] for r in rows], np.int64),
        np.array([r[5] for r in rows], np.int64),
        sources,
    )
