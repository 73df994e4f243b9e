"""`place --compare`: one task mix under stock scheduling and each policy, side by side (the evaluation of
Knauerhase et al. 2008).

Repetitions are interleaved: round r runs every policy set once, in an order
rotated by r, so a shared machine's load falls on all of them alike.  Each run
is a complete place run directory (runs/NN-LABEL) written before the next
starts; Ctrl-C ends the comparison with the runs done so far.  Per task (the
same position in the mix in every run) and policy set:

  ops/s          the workload's own ops per wall second (its heartbeats if it
                 publishes only those)
  ops/CPU-s      ops per second on CPU (schedstat run time).  Under OBS-L a task
                 is stopped while its co-runner has the CPU, under stock it waits
                 on the run queue instead: per wall second mixes in how much CPU
                 time the policy gave the task, per CPU-second shows what the
                 cache (and the rest of the machine) made of the time it got.
  wait/CPU-s     noise: run-queue wait per second on CPU (schedstat), the time
                 the task was runnable while another task had its CPU.  A task
                 OBS-L stops is not runnable: its share shows in ops/s, not here.
  preempt/CPU-s  noise: involuntary context switches per second on CPU.
  p99 latency    noise, for a task publishing heartbeats (report API, e.g.
                 jitterscope-chase): the 99th percentile of its iterations.

Speedups (Knauerhase et al. 2008, L77, after Zhang et al.): per task, the policy's mean over
the repetitions divided by the baseline's (the first set); the system figure is
the geometric mean of those ratios over the tasks, shown with the worst and the
best task (the paper's Fig. 5 and 6).  A task that died (OBS-F's "performance
0") has ratio 0 and makes the geometric mean 0.  Noise: the mean over the
protected tasks (--protect; every task if none is), and its ratio to the baseline.
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import numpy as np
from scipy import stats

from jitterscope import sysinfo
from jitterscope.errors import UsageError
from jitterscope.place import session
from jitterscope.place.plan import Plan, parse_policies
from jitterscope.place.results import (
    CompareSummary,
    Metrics,
    Noise,
    PolicySet,
    Result,
    Spread,
    Summary,
    TaskCompared,
    read_summary,
)
from jitterscope.place.schema import RESULTS
from jitterscope.progress import Progress
from jitterscope.rundir import base_meta, create_run_dir, load_run, new_run_path, rows_table, write_json, write_table

METRICS = ("ops_per_s", "ops_per_cpu_s", "wait_per_cpu_s", "preempt_per_cpu_s", "latency_p99_ns")


def parse_sets(text: str) -> list[tuple[str, frozenset[str]]]:
    """`stock,L,L+C,worst` -> [(label, policies)]: sets separated by commas, policies within one by `+`."""
    labels = [x.strip() for x in text.split(",") if x.strip()]
    if len(labels) < 2 or len(set(labels)) < len(labels):
        raise UsageError(
            f"--compare {text!r}: give two or more different policy sets, e.g. stock,L,L+C,worst "
            f"(the first is the baseline)"
        )
    return [(lb, parse_policies(lb.replace("+", ","))) for lb in labels]


def _rows(s: Summary, rep: int, label: str, name: str) -> list[Result]:
    wall = s["run"]["wall_ns"]
    out: list[Result] = []
    for i, t in enumerate(s["tasks"]):
        cpu_s = t["run_ns"] / 1e9
        lat = t.get("latency_ns")
        ops = t["ops"] or t.get("beats", 0)  # a program publishing only heartbeats: its iterations
        window = t.get("window_ns") or wall  # the task's observed window (older runs: the run)
        out.append(
            {
                "repetition": rep,
                "policies": label,
                "run": name,
                "task": i,
                "name": t["name"],
                "pid": t["pid"],
                "protected": bool(t.get("protected")),
                "wall_ns": wall,
                "ops": ops,
                "run_ns": t["run_ns"],
                "wait_ns": t["wait_ns"],
                "ivcsw": t["ivcsw"],
                "ops_per_s": ops / (window / 1e9) if window > 0 else 0.0,
                "ops_per_cpu_s": ops / cpu_s if cpu_s > 0 else 0.0,
                "wait_per_cpu_s": t["wait_ns"] / t["run_ns"] if t["run_ns"] > 0 else None,
                "preempt_per_cpu_s": t["ivcsw"] / cpu_s if cpu_s > 0 else None,
                "latency_p99_ns": lat["p99"] if lat else None,
                "alive": t["end"] == "running at the end" or t["end"].startswith("ended (exit code 0"),
                "coheavy_fraction": s["coheavy_fraction"],
            }
        )
    return out


def run(plan: Plan, sets: list[tuple[str, frozenset[str]]], repeat: int, progress: bool) -> Path:
    """Every set `repeat` times, interleaved; the comparison's directory."""
    if plan.dry_run:
        raise UsageError("--compare measures the mix under each policy: it cannot be a --dry-run")
    out = create_run_dir(plan.out or new_run_path(sysinfo.host(), "place-compare"))
    (out / "runs").mkdir()  # the comparison's own layout: each policy's run goes in it
    t0, w0 = time.time_ns(), time.monotonic_ns()
    rows: list[Result] = []
    bar = Progress("place compare", repeat * len(sets), enabled=progress)
    ended_by = "complete"
    try:
        for rep in range(repeat):
            for k in range(len(sets)):
                label, pol = sets[(k + rep) % len(sets)]
                name = f"{rep:02d}-{re.sub(r'[^A-Za-z0-9]+', '_', label)}"
                d = session.run(dataclasses.replace(plan, policies=pol, out=out / "runs" / name), progress=False)
                s = read_summary(load_run(d))
                if s["run"]["ended_by"] == "interrupted":
                    raise KeyboardInterrupt
                rows += _rows(s, rep, label, name)
                bar.update(len({r["run"] for r in rows}), note=label)
    except KeyboardInterrupt:
        ended_by = "interrupted"
    finally:
        bar.close()
    write_table(out, "results", rows_table(rows, RESULTS), kind="place-compare")
    write_json(
        out / "meta.json",
        base_meta(
            kind="place-compare",
            host=sysinfo.host(),
            kernel=sysinfo.kernel(),
            cpus=plan.cpus,
            command_line=plan.argv,
            start_unix_ns=t0,
            duration_s=(time.monotonic_ns() - w0) / 1e9,
            interrupted=ended_by != "complete",
            options={
                "sets": [lb for lb, _ in sets],
                "repeat": repeat,
                "duration_ns": plan.duration_ns,
                "quantum_ns": plan.settings.quantum_ns,
            },
        ),
    )
    write_json(out / "summary.json", summarise(rows, [lb for lb, _ in sets], repeat, plan.duration_ns, ended_by))
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


def _spread(ratios: list[float | None]) -> Spread | None:
    """Geometric mean over tasks (0 if a task got nothing), with the worst and best task."""
    r = np.array([x for x in ratios if x is not None], dtype=float)
    if not len(r):
        return None
    g = 0.0 if (r <= 0).any() else float(stats.gmean(r))
    return {"gmean": g, "min": float(r.min()), "max": float(r.max()), "tasks": int(len(r))}


def _mean(values: list[float | None]) -> float | None:
    v = [x for x in values if x is not None]
    return float(np.mean(v)) if v else None


def _noise(rows: list[Result]) -> Noise:
    return {
        "wait_per_cpu_s": _mean([r["wait_per_cpu_s"] for r in rows]),
        "preempt_per_cpu_s": _mean([r["preempt_per_cpu_s"] for r in rows]),
        "latency_p99_ns": _mean([r["latency_p99_ns"] for r in rows]),
    }


def _metrics(rows: list[Result]) -> Metrics:
    """Means over one task's repetitions under one policy set."""
    return {
        "ops_per_s": _mean([r["ops_per_s"] for r in rows]),
        "ops_per_cpu_s": _mean([r["ops_per_cpu_s"] for r in rows]),
        **_noise(rows),
        "repetitions": len(rows),
        "died": sum(not r["alive"] for r in rows),
    }


def _noise_of(tasks: list[Metrics]) -> Noise:
    """The mean over tasks of each task's mean noise."""
    return {
        "wait_per_cpu_s": _mean([t["wait_per_cpu_s"] for t in tasks]),
        "preempt_per_cpu_s": _mean([t["preempt_per_cpu_s"] for t in tasks]),
        "latency_p99_ns": _mean([t["latency_p99_ns"] for t in tasks]),
    }


def summarise(
    rows: list[Result], labels: list[str], repeat: int, duration_ns: float | None, ended_by: str
) -> CompareSummary:
    """summary.json of a comparison (docs/run-format.md, "place compare directories") from its results rows."""
    base = labels[0]
    done = [lb for lb in labels if any(r["policies"] == lb for r in rows)]
    ntasks = max([r["task"] + 1 for r in rows] + [0])
    tasks: list[TaskCompared] = []
    for i in range(ntasks):
        mine = [r for r in rows if r["task"] == i]
        by = {lb: _metrics([r for r in mine if r["policies"] == lb]) for lb in done}
        tasks.append(
            {"task": i, "name": mine[0]["name"], "protected": any(r["protected"] for r in mine), "by_policy": by}
        )
    prot = [t for t in tasks if t["protected"]] or tasks
    policies: dict[str, PolicySet] = {}
    for lb in done:
        per = [t["by_policy"][lb] for t in tasks]
        bas = [t["by_policy"].get(base) for t in tasks]
        noise = _noise_of([t["by_policy"][lb] for t in prot])
        policies[lb] = {
            "speedup_wall": _spread([_ratio(p["ops_per_s"], b["ops_per_s"] if b else None) for p, b in zip(per, bas)]),
            "speedup_cpu": _spread(
                [_ratio(p["ops_per_cpu_s"], b["ops_per_cpu_s"] if b else None) for p, b in zip(per, bas)]
            ),
            "noise": noise,
            "coheavy_fraction": _mean([r["coheavy_fraction"] for r in rows if r["policies"] == lb and r["task"] == 0]),
            "noise_ratio": noise,  # against the baseline's, below
        }
    for lb in done:
        n, b = policies[lb]["noise"], policies[base]["noise"] if base in policies else None
        policies[lb]["noise_ratio"] = {
            "wait_per_cpu_s": _ratio(n["wait_per_cpu_s"], b["wait_per_cpu_s"]) if b else None,
            "preempt_per_cpu_s": _ratio(n["preempt_per_cpu_s"], b["preempt_per_cpu_s"]) if b else None,
            "latency_p99_ns": _ratio(n["latency_p99_ns"], b["latency_p99_ns"]) if b else None,
        }
    return {
        "baseline": base,
        "sets": labels,
        "repeat": repeat,
        "duration_ns": duration_ns,
        "ended_by": ended_by,
        "runs": sorted({r["run"] for r in rows}),
        "noise_of": "protected" if prot is not tasks else "all",
        "tasks": tasks,
        "policies": policies,
    }
