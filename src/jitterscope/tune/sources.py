"""A run's noise sources at the grain a knob acts on.

`measure` attributes time to a kworker thread or to the local_timer IRQ; a knob
acts on what they ran: `vm.stat_interval` on the work function vmstat_update,
`kernel.watchdog_cpumask` on the hrtimer callback watchdog_timer_fn.  `refine`
relabels each such piece of a detour by the annotation that overlapped the
detour most (the work item a kworker ran, the hrtimer callback the timer IRQ
ran): kind `work` or `timer`, named by the function.  The scheduler tick's own
callback stays `irq:local_timer`.  The result is a `Run` with the same tables,
so `compare`'s sample and tests apply to it unchanged.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from jitterscope.rundir import Run
from jitterscope.tune.records import Source

TICK_FUNCTIONS = {
    "tick_nohz_handler",
    "tick_sched_timer",
    "tick_handle_periodic",
    "tick_nohz_highres_handler",
    "tick_nohz_lowres_handler",
}


def _annotations(run: Run, kind: str, detail: str | None) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per CPU: (start, end, name) of the annotations of `kind`, by start time."""
    act = run.activity
    if act.num_rows == 0:
        return {}
    kinds = np.asarray(act.column("kind").to_pylist(), dtype=object)
    sel = kinds == kind
    if detail is not None:
        sel &= np.asarray(act.column("detail").to_pylist(), dtype=object) == detail
    cpu, start = act.column("cpu").to_numpy()[sel], act.column("start_ns").to_numpy()[sel]
    end, names = act.column("end_ns").to_numpy()[sel], np.asarray(act.column("name").to_pylist(), dtype=object)[sel]
    out = {}
    for c in np.unique(cpu):
        m = cpu == c
        order = np.argsort(start[m], kind="stable")
        out[int(c)] = (start[m][order], end[m][order], names[m][order])
    return out


def _label(
    ann: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]], cpu: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """For each window [lo, hi) on `cpu`, the annotation overlapping it most (None if none)."""
    out = np.full(len(cpu), None, dtype=object)
    for c, (s, e, names) in ann.items():
        rows = np.flatnonzero(cpu == c)
        if not len(rows) or not len(s):
            continue
        idx = np.searchsorted(s, hi[rows], side="left") - 1
        best = np.zeros(len(rows))
        for back in (0, 1):  # the annotation starting last before the window ends, and the one before it
            i = idx - back
            ok = i >= 0
            ii = np.where(ok, i, 0)
            ov = np.where(ok, np.minimum(e[ii], hi[rows]) - np.maximum(s[ii], lo[rows]), 0)
            take = ov > best
            out[rows[take]] = names[ii[take]]
            best = np.where(take, ov, best)
    return out


def refine(run: Run, origins: dict[str, set[str]] | None = None) -> Run:
    """`run` with kworker time relabelled `work:<function>` and the timer IRQ's non-tick callbacks `timer:<fn>`.

    `origins`, if given, is filled with each function's original thread or IRQ names (`kworker/1:0`)."""
    att = run.attribution
    if att.num_rows == 0 or run.activity.num_rows == 0:
        return run
    kinds = np.asarray(att.column("kind").to_pylist(), dtype=object)
    names = np.asarray(att.column("name").to_pylist(), dtype=object)
    det = run.detour_arrays()
    d = att.column("detour").to_numpy()
    lo = det.start_ns[d]
    hi = det.end_ns[d]
    cpu = att.column("cpu").to_numpy()
    kw = (kinds == "thread") & np.array([str(n).startswith("kworker/") for n in names], dtype=bool)
    lt = (kinds == "irq") & (names == "local_timer")
    new_kinds, new_names = kinds.copy(), names.copy()
    for sel, ann, kind in (
        (kw, _annotations(run, "work", None), "work"),
        (lt, _annotations(run, "timer", "hrtimer"), "timer"),
    ):
        rows = np.flatnonzero(sel)
        labels = _label(ann, cpu[rows], lo[rows], hi[rows])
        for r, fn in zip(rows, labels):
            if fn is not None and not (kind == "timer" and fn in TICK_FUNCTIONS):
                new_kinds[r], new_names[r] = kind, fn
                if origins is not None:
                    origins.setdefault(fn, set()).add(str(names[r]))
    table = att.set_column(att.schema.get_field_index("kind"), "kind", pa.array(new_kinds.tolist(), pa.string()))
    table = table.set_column(table.schema.get_field_index("name"), "name", pa.array(new_names.tolist(), pa.string()))
    tables = dict(run._tables)
    tables["attribution"] = table
    return dataclasses.replace(run, _tables=tables)


def thread_pids(run: Run) -> dict[str, list[int]]:
    """Thread name -> the pids it ran as on the measured CPUs (the activity table's detail)."""
    act = run.activity
    if act.num_rows == 0:
        return {}
    kinds = act.column("kind").to_pylist()
    out: dict[str, set[int]] = {}
    for k, n, det in zip(kinds, act.column("name").to_pylist(), act.column("detail").to_pylist()):
        if k == "thread" and det and str(det).isdigit() and int(det) > 0:
            out.setdefault(n, set()).add(int(det))
    return {n: sorted(p) for n, p in out.items()}


def sources(run: Run, origins: dict[str, set[str]] | None = None) -> list[Source]:
    """Refined sources of a run: kind, name, count, total_ns, ppm (of the measured CPU-time), share, max_ns, cpus."""
    att = refine(run, origins).attribution
    if att.num_rows == 0:
        return []
    exposure = float(run.duration_ns) * max(len(run.cpus), 1)
    total = float(np.sum(att.column("ns").to_numpy()))
    kinds = np.asarray(att.column("kind").to_pylist(), dtype=object)
    names = np.asarray(att.column("name").to_pylist(), dtype=object)
    ns, dets, cpus = att.column("ns").to_numpy(), att.column("detour").to_numpy(), att.column("cpu").to_numpy()
    keys = kinds + "\x1f" + names
    out: list[Source] = []
    for key in np.unique(keys):
        m = keys == key
        kind, name = str(key).split("\x1f", 1)
        out.append(
            {
                "kind": kind,
                "name": name,
                "count": len(np.unique(dets[m])),
                "total_ns": int(ns[m].sum()),
                "ppm": float(ns[m].sum()) / exposure * 1e6 if exposure else 0.0,
                "share": float(ns[m].sum()) / total if total else 0.0,
                "max_ns": int(ns[m].max()),
                "cpus": sorted({int(c) for c in cpus[m]}),
            }
        )
    return sorted(out, key=lambda s: -s["total_ns"])
