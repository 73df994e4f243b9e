"""A place run's tables, summary.json and meta.json, from what the engine recorded.

Co-scheduling of heavy tasks (the OBS-L test's measure, spec B.3): of the time
a heavy task (normalised weight >= 0.5) runs, the share during which another
heavy task runs in the same LLC group (0 under OBS-L with cb/sl pairs, 1 under
the forced worst case [cb,sl][cb,sl], 0.5 for independent choices).  Under
OBS-L or worst it is exact (jitterscope decided who ran when); under the
kernel's scheduling it is estimated per quantum from each CPU's heavy run time,
assuming the CPUs' choices independent (a Poisson
binomial): it says "estimated".
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from jitterscope import sysinfo
from jitterscope.place import schema
from jitterscope.place.engine import Engine
from jitterscope.place.plan import Plan
from jitterscope.place.results import Latency, Observation, Summary, Task
from jitterscope.place.tasks import Placed
from jitterscope.place.topology import Topology
from jitterscope.rundir import base_meta, write_json, write_table


def _co_exact(rows: list[Observation], topo: Topology, heavy: float) -> float:
    """Time with two or more heavy tasks in one group / time with at least one."""
    events: dict[int, list[tuple[int, int]]] = {}
    for r in rows:
        if r["weight"] >= heavy:
            g = topo.group_of(r["cpu"])
            events.setdefault(g, []).extend([(r["start_ns"], 1), (r["end_ns"], -1)])
    both = anyh = 0
    for ev in events.values():
        ev.sort()
        n, last = 0, 0
        for t, d in ev:
            both += t - last if n >= 2 else 0
            anyh += t - last if n >= 1 else 0
            n, last = n + d, t
    return both / anyh if anyh > 0 else 0.0


def _co_estimated(rows: list[Observation], topo: Topology, heavy: float, quantum: float) -> float:
    """Per quantum and group: each CPU's chance to be running a heavy task when it runs one of ours (its heavy
    run time / our run time there), CPUs independent; P(two or more heavy) / P(at least one), over the run."""
    win: dict[tuple[int, int], dict[int, list[float]]] = {}
    for r in rows:
        k = (round(r["end_ns"] / quantum), topo.group_of(r["last_cpu"]))
        acc = win.setdefault(k, {}).setdefault(r["last_cpu"], [0.0, 0.0])
        acc[0] += r["run_ns"] if r["weight"] >= heavy else 0.0
        acc[1] += r["run_ns"]
    both = anyh = 0.0
    for cpus in win.values():
        p = np.array([h / t for h, t in cpus.values() if t > 0])
        if len(p) < 2:
            continue
        none = np.prod(1 - p)
        one = sum(p[i] * np.prod(np.delete(1 - p, i)) for i in range(len(p)))
        both += float(1 - none - one)
        anyh += float(1 - none)
    return both / anyh if anyh > 0 else 0.0


def _tasks(eng: Engine, wall: int) -> list[Task]:
    out: list[Task] = []
    for p in eng.tasks:
        a, b = p.first, p.snap
        ws = [r["weight"] for r in eng.observations if r["pid"] == p.pid]
        srcs = Counter(r["source"] for r in eng.observations if r["pid"] == p.pid)
        # these counts cover the task's first to last observation, not the run: rates over that window
        run_ns, wait_ns, ivcsw, ops = (
            (b.run_ns - a.run_ns, b.wait_ns - a.wait_ns, b.ivcsw - a.ivcsw, b.ops - a.ops) if a and b else (0, 0, 0, 0)
        )
        window = p.snap_ns - p.first_ns if a and b else wall
        task: Task = {
            "pid": p.pid,
            "name": p.t.name,
            "command": p.prog.argv,
            "home": p.t.home,
            "weight_source": srcs.most_common(1)[0][0] if srcs else "none",
            "declared": p.declared,
            "mean_weight": float(np.mean(ws)) if ws else p.t.weight,
            "run_ns": run_ns,
            "wait_ns": wait_ns,
            "ivcsw": ivcsw,
            "ops": ops,
            "specials": b.specials if b else 0,  # since the task's start
            "faults": b.faults if b else 0,
            "window_ns": window,
            "ops_per_s": ops / (window / 1e9) if window > 0 else 0.0,
            "quanta": len(ws),
            "faulting_quanta": p.t.f.faulting_quanta,
            "banned": p.t.f.banned,
            "credit_ns": p.t.credit_ns,
            "end": p.end or "running at the end",
            "protected": p.protected,
            "beats": 0,
            "latency_ns": None,
        }
        _latency(p, task)
        out.append(task)
    return out


def _latency(p: Placed, task: Task) -> None:
    """The task's heartbeat latencies in the run (report API), if it publishes any: its measured noise."""
    lat = p.beats.all() if p.beats is not None else np.zeros(0)
    if not len(lat):
        return
    q = np.percentile(lat, [50, 99])
    task["beats"] = int(len(lat))
    task["beats_lost"] = p.beats.lost if p.beats else 0
    lat_ns: Latency = {"p50": float(q[0]), "p99": float(q[1]), "max": float(lat.max()), "mean": float(lat.mean())}
    task["latency_ns"] = lat_ns


def summary(plan: Plan, eng: Engine, ended_by: str, wall: int) -> Summary:
    s, rows = plan.settings, eng.observations
    wmax = max([r["weight"] for r in rows] + [1e-12])
    heavy = s.heavy * wmax
    co = _co_exact(rows, plan.topo, heavy) if eng.cfg.slots else _co_estimated(rows, plan.topo, heavy, s.quantum_ns)
    bal = None
    if eng.splits:
        t = np.array([x[0] for x in eng.splits] + [wall], dtype=float)
        bal = float(np.sum(np.diff(t) * np.array([x[1] for x in eng.splits])) / max(t[-1] - t[0], 1))
    credits = [d["value"] for d in eng.decisions if d["action"] == "credit"]
    obs = np.array(eng.observe_ns or [0])
    srcs = Counter(r["source"] for r in rows)
    return {
        "run": {
            "policies": sorted(plan.policies),
            "quantum_ns": s.quantum_ns,
            "wall_ns": wall,
            "ended_by": ended_by,
            "dry_run": plan.dry_run,
            "actuator": plan.actuator if eng.cfg.slots else None,
            "cpus": plan.cpus,
            "topology": plan.topo.as_dict(),
            "pmu": {"available": plan.pmu_ok, "why": plan.pmu_why},
            "settings": {
                "bins": s.bins,
                "period_ns": s.period_ns,
                "credit": s.credit,
                "credit_norm": s.norm,
                "obs_f": f"F{s.f_variant}",
                "release_after": s.release_after,
                "ban_after": s.ban_after,
                "heavy": s.heavy,
            },
        },
        "weight_sources": dict(srcs),
        "tasks": _tasks(eng, wall),
        "coheavy_fraction": co,
        "coheavy_method": "exact" if eng.cfg.slots else "estimated",
        "balanced_fraction": bal,
        "credit": {"count": len(credits), "moved_ns": float(sum(credits))},
        "decisions": dict(Counter(d["action"] for d in eng.decisions)),
        "observer": {
            "snapshots": len(eng.observe_ns),
            "mean_ns": float(obs.mean()),
            "p99_ns": float(np.percentile(obs, 99)),
        },
    }


def meta(plan: Plan, t_start: int, wall: int = 0, ended_by: str = "") -> dict[str, Any]:
    """meta.json of a place run (the session writes it at the start, marked incomplete)."""
    return base_meta(
        kind="place",
        host=sysinfo.host(),
        kernel=sysinfo.kernel(),
        cpus=plan.cpus,
        command_line=plan.argv,
        start_unix_ns=t_start,
        duration_s=wall / 1e9,
        interrupted=ended_by == "interrupted",
        options={
            "policies": sorted(plan.policies),
            "quantum_ns": plan.settings.quantum_ns,
            "actuator": plan.actuator,
            "weights": plan.weights,
            "dry_run": plan.dry_run,
        },
    )


def write_records(run_dir: Path, plan: Plan, eng: Engine, ended_by: str, wall: int) -> None:
    """The tables and summary.json: all of the run but its final meta.json.  Written when the run stops,
    before the session fsyncs it and marks it "analysing": what the engine held in memory is then on
    disk, and a kill from there on loses nothing (`analyze` finishes the run: kind.py)."""
    write_table(
        run_dir, "observations", pa.Table.from_pylist(eng.observations, schema=schema.OBSERVATIONS), kind="place"
    )
    write_table(run_dir, "decisions", pa.Table.from_pylist(eng.decisions, schema=schema.DECISIONS), kind="place")
    write_json(run_dir / "summary.json", summary(plan, eng, ended_by, wall))
