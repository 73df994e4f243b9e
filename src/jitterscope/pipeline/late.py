"""Why some iterations were late: what else ran on the pipeline's CPUs while they ran.

With `--trace`, the kernel trace (the same private instance and parser
`measure` uses) gives each traced CPU's time partitioned among the innermost
contexts (thread slices, softirqs, hard IRQs, NMIs: tracing/parse.py).  Each
iteration's window [start, end] on each CPU the pipeline uses is split among
those owners as measure's detours are, by its streaming analysis (per CPU, in
bounded memory, CPUs in parallel: measure/stream.py); the
pipeline's own threads (`js-pipe/<t>`) and the idle task are its own time and
dropped, what remains was taken by other work while the iteration ran.  With
spinning waits every such nanosecond delayed a pipeline thread; with sleeping
waits some of it fell where the thread had nothing to do, so it is an upper
bound.  The summary compares late iterations (latency at or above a
percentile, p99 by default) with typical ones (at or below the median), per
source: what late iterations suffered that typical ones did not.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from jitterscope.measure.build import analyse_trace
from jitterscope.pipeline.results import Late, LateSource
from jitterscope.pipeline.runtime import THREAD_COMM_PREFIX

OWN_OR_IDLE = (THREAD_COMM_PREFIX, "swapper/")
TOP = 8


def attribute_iterations(
    trace_dir: Path,
    t0_tsc: int,
    hz: float,
    start_ns: np.ndarray,
    end_ns: np.ndarray,
    cpus: list[int],
    own_tids: set[int],
) -> tuple[pa.Table, int]:
    """Per (iteration, cpu, source) the ns other contexts took inside the iteration; and lost events.

    The iterations' windows on each CPU are attributed as measure's detours are, by the streaming analysis
    (measure/build.py analyse_trace): per CPU, in bounded memory, the CPUs in parallel processes."""
    n = len(start_ns)
    start = np.asarray(start_ns, np.int64)
    dur = np.asarray(end_ns, np.int64) - start
    by_start = np.argsort(start, kind="stable")  # the parser takes each CPU's windows in order of their start
    win_cpu = np.repeat(np.unique(np.asarray(cpus, np.int32)), n)
    win_it = np.tile(by_start, len(win_cpu) // max(n, 1))
    traced = analyse_trace(
        None, trace_dir, win_cpu, start[win_it], dur[win_it], None, own_tids, {}, t0_tsc, hz, functions=False
    )
    att = traced.merged.attribution
    sources = att.sources
    keep = np.array([i != 0 and not n_.startswith(OWN_OR_IDLE) for i, (k, n_) in enumerate(sources)], bool)
    sel = keep[att.source] if len(att.source) else np.zeros(0, bool)
    kind_arr = np.array([k for k, _ in sources], dtype=object)
    name_arr = np.array([nm for _, nm in sources], dtype=object)
    src = att.source[sel]
    table = pa.table(
        {
            "iteration": win_it[att.detour[sel]],
            "cpu": win_cpu[att.detour[sel]],
            "kind": pa.array(kind_arr[src].tolist(), pa.string()),
            "name": pa.array(name_arr[src].tolist(), pa.string()),
            "ns": att.ns[sel],
        }
    )
    return table, int(sum(traced.lost_by_cpu.values()))


def late_summary(latency_ns: np.ndarray, attribution: pa.Table, percentile: float = 99.0) -> Late:
    """Late iterations (latency >= the percentile) against typical ones (<= the median), per source."""
    lat = np.asarray(latency_ns, np.float64)
    if len(lat) == 0:
        return {"percentile": percentile, "count": 0, "sources": []}
    threshold = float(np.percentile(lat, percentile))
    median = float(np.percentile(lat, 50))
    # late must be above typical: when under 1% are slow the percentile is itself a typical latency
    late = np.flatnonzero(lat >= threshold) if threshold > median else np.flatnonzero(lat > median)
    typical = np.flatnonzero(lat <= median)
    it = attribution.column("iteration").to_numpy()
    ns = attribution.column("ns").to_numpy().astype(np.float64)
    label = np.array(
        [f"{k}:{n}" for k, n in zip(attribution.column("kind").to_pylist(), attribution.column("name").to_pylist())],
        dtype=object,
    )
    labels, code = np.unique(label, return_inverse=True) if len(label) else (np.array([]), np.zeros(0, int))
    per: dict[str, np.ndarray] = {}
    for c, lab in enumerate(labels):
        mask = code == c
        per[str(lab)] = np.bincount(it[mask], weights=ns[mask], minlength=len(lat))[: len(lat)]
    rows: list[LateSource] = []
    for lab, v in per.items():
        late_mean = float(v[late].mean()) if len(late) else 0.0
        typ_mean = float(v[typical].mean()) if len(typical) else 0.0
        kind, _, name = lab.partition(":")
        rows.append(
            {
                "kind": kind,
                "name": name,
                "late_ns": late_mean,
                "typical_ns": typ_mean,
                "excess_ns": late_mean - typ_mean,
                "late_iterations_hit": int((v[late] > 0).sum()),
            }
        )
    rows.sort(key=lambda r: -r["excess_ns"])
    excess = float(lat[late].mean() - lat[typical].mean()) if len(late) and len(typical) else 0.0
    explained = sum(max(0.0, float(r["excess_ns"])) for r in rows)
    return {
        "percentile": percentile,
        "threshold_ns": threshold,
        "count": len(late),
        "latency_excess_ns": excess,
        "explained_ns": explained,
        "explained_share": min(1.0, explained / excess) if excess > 0 else 0.0,
        "sources": rows[:TOP],
    }
