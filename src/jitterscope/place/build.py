"""A place run's tables, summary.json and meta.json, from its raw record stream (raw.py): one path
after a normal stop and after a kill (`jitterscope analyze`, kind.py).

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

import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from jitterscope import sysinfo
from jitterscope.errors import JitterscopeError
from jitterscope.place import schema
from jitterscope.place.plan import Plan
from jitterscope.place.raw import RAW, Raw, read_raw
from jitterscope.place.results import Observation, RunFacts, RunHeader, Summary, Task
from jitterscope.place.topology import Topology
from jitterscope.rundir import base_meta, drop_session_marks, rows_table, write_json, write_table
from jitterscope.session import read_meta, write_meta


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


def _tasks(raw: Raw) -> list[Task]:
    """Each task's final state (raw.py) with what its observations say: its weights and their sources."""
    ws: dict[int, list[float]] = {}
    srcs: dict[int, Counter[str]] = {}
    for r in raw.observations:
        ws.setdefault(r["pid"], []).append(r["weight"])
        srcs.setdefault(r["pid"], Counter())[r["source"]] += 1
    out: list[Task] = []
    for st in raw.tasks:
        w, src, window = ws.get(st["pid"], []), srcs.get(st["pid"]), st["window_ns"]
        out.append(
            {
                "pid": st["pid"],
                "name": st["name"],
                "command": st["command"],
                "home": st["home"],
                "weight_source": src.most_common(1)[0][0] if src else "none",
                "declared": st["declared"],
                "mean_weight": float(np.mean(w)) if w else st["weight"],
                "run_ns": st["run_ns"],
                "wait_ns": st["wait_ns"],
                "ivcsw": st["ivcsw"],
                "ops": st["ops"],
                "specials": st["specials"],
                "faults": st["faults"],
                "window_ns": window,
                "ops_per_s": st["ops"] / (window / 1e9) if window > 0 else 0.0,
                "quanta": len(w),
                "faulting_quanta": st["faulting_quanta"],
                "banned": st["banned"],
                "credit_ns": st["credit_ns"],
                "end": st["end"],
                "protected": st["protected"],
                "beats": st["beats"],
                "beats_lost": st["beats_lost"],
                "latency_ns": st["latency_ns"],
            }
        )
    return out


def run_facts(plan: Plan, slots: bool) -> RunFacts:
    """The run header's facts known from its start (the raw stream's first record)."""
    s = plan.settings
    return {
        "policies": sorted(plan.policies),
        "quantum_ns": s.quantum_ns,
        "dry_run": plan.dry_run,
        "actuator": plan.actuator if slots else None,
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
    }


def summary(raw: Raw, facts: RunFacts, wall: int, ended_by: str) -> Summary:
    rows = raw.observations
    exact = facts["actuator"] is not None  # OBS-L or worst: jitterscope decided who ran when
    topo = Topology(facts["topology"]["llc_groups"])
    heavy = facts["settings"]["heavy"] * max([r["weight"] for r in rows] + [1e-12])
    co = _co_exact(rows, topo, heavy) if exact else _co_estimated(rows, topo, heavy, facts["quantum_ns"])
    bal = None
    if raw.splits:
        t = np.array([x[0] for x in raw.splits] + [max(wall, raw.splits[-1][0])], dtype=float)
        bal = float(np.sum(np.diff(t) * np.array([x[1] for x in raw.splits])) / max(t[-1] - t[0], 1))
    credits = [d["value"] for d in raw.decisions if d["action"] == "credit"]
    obs = np.array(raw.costs or [0])
    header: RunHeader = {**facts, "wall_ns": wall, "ended_by": ended_by}
    return {
        "run": header,
        "weight_sources": dict(Counter(r["source"] for r in rows)),
        "tasks": _tasks(raw),
        "coheavy_fraction": co,
        "coheavy_method": "exact" if exact else "estimated",
        "balanced_fraction": bal,
        "credit": {"count": len(credits), "moved_ns": float(sum(credits))},
        "decisions": dict(Counter(d["action"] for d in raw.decisions)),
        "observer": {
            "snapshots": len(raw.costs),
            "mean_ns": float(obs.mean()),
            "p99_ns": float(np.percentile(obs, 99)),
        },
    }


def meta(plan: Plan, t_start: int) -> dict[str, Any]:
    """meta.json of a place run (the session writes it at the start, marked incomplete; `finish` adds
    duration_s and interrupted)."""
    return base_meta(
        kind="place",
        host=sysinfo.host(),
        kernel=sysinfo.kernel(),
        cpus=plan.cpus,
        command_line=plan.argv,
        start_unix_ns=t_start,
        duration_s=0.0,
        interrupted=False,
        options={
            "policies": sorted(plan.policies),
            "quantum_ns": plan.settings.quantum_ns,
            "actuator": plan.actuator,
            "weights": plan.weights,
            "dry_run": plan.dry_run,
        },
    )


def missing(raw: Raw) -> list[str]:
    """What a run's raw stream lacks, in words (a killed run's `meta.recovered.missing`)."""
    out = [f"its last record ({raw.torn} bytes, cut by the kill)"] if raw.torn else []
    if raw.end is None:
        at = f"{raw.last_ns / 1e9:.3f} s"
        out.append(f"its end: wall_ns and duration_s are those of its last record ({at}), ended_by 'interrupted'")
        beating = [f"{t['name']}[{t['pid']}]" for t in raw.states if t.get("heartbeats")]
        if beating:
            out.append(f"the heartbeat latencies (beats, latency_ns) of {', '.join(beating)}")
        if raw.states:
            out.append(
                f"the tasks' counters after their last state ({(raw.states_ns or 0) / 1e9:.3f} s; written once a "
                "second): run_ns, wait_ns, ivcsw, ops, window_ns, specials, faults, credit_ns"
            )
    return out


def finish(run_dir: Path, recovered: bool = False) -> Raw:
    """The run from its raw stream (raw.py), after a normal stop and after a kill alike: its tables,
    summary.json and meta.json complete (the session's, with duration_s and interrupted; `recovered`:
    what is missing), then the raw stream goes.  Raises when the stream holds no run: killed before its
    loop started."""
    raw = read_raw(run_dir / RAW)
    meta = read_meta(run_dir)
    drop_session_marks(meta)
    meta.pop("ended_by", None)  # the session's note for a recovery; summary.json's run says it
    if raw.run is None or (raw.states_ns is None and raw.end is None):
        raise JitterscopeError(
            f"{run_dir}: a place run killed as it started its tasks, before observing any: nothing was recorded "
            "(meta.json keeps its tasks' CPUs and options; its tasks were stopped and released)"
        )
    wall, ended_by = (raw.end["wall_ns"], raw.end["ended_by"]) if raw.end else (raw.last_ns, "interrupted")
    write_table(run_dir, "observations", rows_table(raw.observations, schema.OBSERVATIONS), kind="place")
    write_table(run_dir, "decisions", rows_table(raw.decisions, schema.DECISIONS), kind="place")
    write_json(run_dir / "summary.json", summary(raw, raw.run, wall, ended_by))
    meta.update(duration_s=wall / 1e9, interrupted=bool(meta.get("interrupted")) or ended_by == "interrupted")
    if recovered:
        meta["recovered"] = {
            "by": "jitterscope analyze",
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "missing": missing(raw),
        }
    write_meta(run_dir, meta)
    (run_dir / RAW).unlink()
    return raw
