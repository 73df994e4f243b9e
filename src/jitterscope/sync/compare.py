"""`jitterscope compare` of two sync runs: did a type of synchronisation jitter, a lock or a cause move?

Both runs are put on one basis first: every interval's T is re-thresholded
with the larger N of the two (and `excess` mode if the modes differ), so a
different --threshold never reads as a change.  Then, with compare's own
statistics (compare/stats.py):

* per type (lu, u, sw, ... and hd, ns when both runs were traced): the rate of
  jitter events per second of run time, the exact conditional Poisson test
  (Przyborowski & Wilenski 1940), and their jitter per event, Mann-Whitney U
  with Cliff's delta (Mann & Whitney 1947; Cliff 1993);
* all synchronisation jitter pooled, the same two tests;
* per object, matched by its name (kind + symbol or call site; addresses move
  with ASLR): jitter per event, Mann-Whitney;
* causes (holder, waiter and caller side) as totals, without a test (one
  interval's time is split among several causes, not independent samples).

Every p-value of one comparison is adjusted together (Benjamini & Hochberg
1995).  A regression (exit 1 with --fail-on-regression): a type or the pool got
worse with q < alpha, to at least --min-ratio times the base's jitter per
second, by at least --min-ppm of the run time.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from jitterscope.compare.stats import bh_adjust, duration_test, rate_test
from jitterscope.rundir import Run
from jitterscope.sync.model import SYNC_TYPES, jitter_of
from jitterscope.sync.rows import Object

TOP = 10


@dataclass(frozen=True)
class _Side:
    """One run's jitter per type, object and cause on the common basis."""

    run_s: float
    types: dict[str, list[int]]
    objects: dict[str, list[int]]
    causes: dict[str, int]
    critical_path_ns: int
    tracing: bool


class Stats(TypedDict):
    count: int
    jitter_ns: int
    rate_hz: float
    ppm: float
    median_ns: float
    p99_ns: float


class Test(TypedDict, total=False):
    """A rate test (ratio, p) or a per-event test (median_ratio, cliffs_delta, p); q once adjusted."""

    ratio: float | None
    median_ratio: float | None
    cliffs_delta: float
    p: float
    q: float


class Row(TypedDict):
    name: str
    base: Stats
    new: Stats
    tests: dict[str, Test]
    ratio: float | None  # NEW/BASE jitter per second of run time; None: new


class CauseChange(TypedDict):
    name: str
    base_ns: int
    new_ns: int


class RunInfo(TypedDict):
    path: str
    command: list[str]
    run_ns: int
    threads: int
    critical_path_ns: int
    host: str | None


class Basis(TypedDict):
    threshold_ns: int
    mode: str


class Comparison(TypedDict):
    """`compare --json` of two sync runs."""

    kind: str
    runs: dict[str, RunInfo]  # base, new
    basis: Basis
    total: Row
    types: list[Row]
    objects: list[Row]
    causes: list[CauseChange]
    notes: list[str]
    alpha: float
    min_ppm: float
    min_ratio: float
    regression: bool
    worse: list[str]


def basis(base: Run, new: Run) -> tuple[int, str, list[str]]:
    """The common (threshold, mode) and notes on what was adjusted."""
    rb, rn = base.summary["run"], new.summary["run"]
    threshold = max(int(rb["threshold_ns"]), int(rn["threshold_ns"]))
    mode = rb["mode"] if rb["mode"] == rn["mode"] else "excess"
    notes = []
    if rb["threshold_ns"] != rn["threshold_ns"] or rb["mode"] != rn["mode"]:
        notes.append(
            f"runs measured with different thresholds/modes: both re-thresholded at N = {threshold} ns, {mode} mode"
        )
    if rb["command"] != rn["command"]:
        notes.append(f"different commands: {' '.join(rb['command'])!r} vs {' '.join(rn['command'])!r}")
    if base.meta.get("host") != new.meta.get("host"):
        notes.append(f"different hosts: {base.meta.get('host')} vs {new.meta.get('host')}")
    return threshold, mode, notes


def _side(run: Run, threshold: int, mode: str) -> _Side:
    rows = run.table("jitter").to_pylist()
    t = np.array([r["t_ns"] for r in rows], dtype=np.int64)
    j = jitter_of(t, threshold, mode) if len(rows) else np.zeros(0, np.int64)
    names = {(o["pid"], o["obj"]): _object_name(o) for o in run.table("objects").to_pylist()}
    types: dict[str, list[int]] = defaultdict(list)
    objects: dict[str, list[int]] = defaultdict(list)
    kept: set[int] = set()
    for r, v in zip(rows, j.tolist()):
        if v > 0:
            types[r["type"]].append(v)
            kept.add(r["id"])
            if r["type"] in SYNC_TYPES and (r["pid"], r["obj"]) in names:
                objects[names[(r["pid"], r["obj"])]].append(v)
    causes: dict[str, int] = defaultdict(int)
    for c in run.table("causes").to_pylist():
        if c["jitter"] in kept:
            causes[f"{c['side']}: {c['kind']}:{c['name']}"] += c["ns"]
    return _Side(
        max(run.summary["run_ns"], 1) / 1e9,
        types,
        objects,
        causes,
        int(run.summary["critical_path"]["counter_jitter_ns"]),
        bool(run.summary["run"]["tracing"]),
    )


def _object_name(o: Object) -> str:
    """An object's name that holds across runs (addresses and thread ids do not)."""
    if o["kind"] == "thread":
        return "thread joins"
    return f"{o['kind']} {o['symbol'] or o['site'] or hex(o['obj'])}"


def _stats(v: list[int], run_s: float) -> Stats:
    a = np.asarray(v, dtype=np.int64)
    return {
        "count": len(a),
        "jitter_ns": int(a.sum()),
        "rate_hz": len(a) / run_s,
        "ppm": float(a.sum()) / run_s / 1e3,
        "median_ns": float(np.median(a)) if len(a) else 0.0,
        "p99_ns": float(np.percentile(a, 99)) if len(a) else 0.0,
    }


def _row(name: str, b: list[int], n: list[int], sb: float, sn: float, rate: bool = True) -> Row:
    row: Row = {"name": name, "base": _stats(b, sb), "new": _stats(n, sn), "tests": {}, "ratio": None}
    if rate:
        rt, _ = rate_test(len(b), sb, len(n), sn)
        row["tests"]["rate"] = {"ratio": _finite(rt.ratio), "p": rt.p}
    dt = duration_test(np.asarray(b, float), np.asarray(n, float))
    if dt is not None:
        row["tests"]["jitter"] = {"median_ratio": _finite(dt.median_ratio), "cliffs_delta": dt.cliffs_delta, "p": dt.p}
    jb, jn = row["base"]["jitter_ns"] / sb, row["new"]["jitter_ns"] / sn
    row["ratio"] = jn / jb if jb else (None if jn else 1.0)  # jitter per second of run time; None: new
    return row


def _finite(x: float) -> float | None:
    """JSON has no infinity: a ratio over nothing is null (the type or object is new)."""
    return float(x) if np.isfinite(x) else None


def compare_syncs(base: Run, new: Run, th: Any = None) -> Comparison:

    alpha, min_ppm, min_ratio = (getattr(th, k, d) for k, d in (("alpha", 0.01), ("min_ppm", 20.0), ("min_ratio", 1.5)))
    threshold, mode, notes = basis(base, new)
    b, n = _side(base, threshold, mode), _side(new, threshold, mode)
    sb, sn = b.run_s, n.run_s
    kinds = list(SYNC_TYPES) + (["hd", "ns"] if b.tracing and n.tracing else [])
    if b.tracing != n.tracing:
        notes.append("one run was traced, the other not: holder delay, non-sync jitter and causes not compared")
    types = [_row(k, b.types.get(k, []), n.types.get(k, []), sb, sn) for k in kinds if b.types.get(k) or n.types.get(k)]
    pooled = [[v for k in SYNC_TYPES for v in s.types.get(k, [])] for s in (b, n)]
    pool = _row("all sync", pooled[0], pooled[1], sb, sn)
    objs = sorted(
        set(b.objects) | set(n.objects),
        key=lambda k: -abs(sum(n.objects.get(k, [])) / sn - sum(b.objects.get(k, [])) / sb),
    )
    objects = [_row(k, b.objects.get(k, []), n.objects.get(k, []), sb, sn, rate=False) for k in objs[:TOP]]
    tests = [t for r in [pool, *types, *objects] for t in r["tests"].values()]
    for t, q in zip(tests, bh_adjust([t["p"] for t in tests])):
        t["q"] = q
    worse = [r["name"] for r in [pool, *types] if _worse(r, alpha, min_ppm, min_ratio)]
    causes: list[CauseChange] = []
    if b.tracing and n.tracing:
        for k in sorted(
            set(b.causes) | set(n.causes),
            key=lambda k: -abs(n.causes.get(k, 0) / sn - b.causes.get(k, 0) / sb),
        )[:TOP]:
            causes.append({"name": k, "base_ns": b.causes.get(k, 0), "new_ns": n.causes.get(k, 0)})
    info: dict[str, RunInfo] = {
        w: {
            "path": str(r.path),
            "command": r.summary["run"]["command"],
            "run_ns": r.summary["run_ns"],
            "threads": r.summary["threads"],
            "critical_path_ns": s.critical_path_ns,
            "host": r.meta.get("host"),
        }
        for w, r, s in (("base", base, b), ("new", new, n))
    }
    return {
        "kind": "sync",
        "runs": info,
        "basis": {"threshold_ns": threshold, "mode": mode},
        "total": pool,
        "types": types,
        "objects": objects,
        "causes": causes,
        "notes": notes,
        "alpha": alpha,
        "min_ppm": min_ppm,
        "min_ratio": min_ratio,
        "regression": bool(worse),
        "worse": worse,
    }


def _worse(row: Row, alpha: float, min_ppm: float, min_ratio: float) -> bool:
    sig = any(
        t.get("q", 1.0) < alpha and ((t.get("ratio", 0) or np.inf) > 1 or t.get("cliffs_delta", 0) > 0)
        for t in row["tests"].values()
    )
    ratio = np.inf if row["ratio"] is None else row["ratio"]
    return sig and ratio >= min_ratio and row["new"]["ppm"] - row["base"]["ppm"] >= min_ppm
