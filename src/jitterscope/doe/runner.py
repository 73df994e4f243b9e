"""Run an experiment: every (treatment, replication) once, in random order, safely.

For each run the factors' levels are applied through a fresh Journal (each
change recorded on disk before it is made), the system settles, the response is
measured, and the journal is undone, so every run starts from the machine as it
was found.  Each finished run is appended (fsynced) to runs.jsonl in the
experiment directory; `--resume` skips the runs found there.

Experiment directory:
  plan.yaml         the plan exactly as given (resume refuses a different one)
  experiment.json   design, factors, treatments in Yates order, the run order
  runs.jsonl        one line per finished run: run, treatment, rep, y, timing
  measure/run-NNN/  the measure run directory of each run (measure responses)
  analysis.json, analysis.txt, boxplot.svg   written when the last run ends
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

import numpy as np
from pydantic import TypeAdapter, ValidationError

from jitterscope import atomic, boundedio, outpath, sysinfo
from jitterscope.doe import render
from jitterscope.doe.design import Design, parse_generator, roman, run_order
from jitterscope.doe.factors import APPLY_ORDER
from jitterscope.doe.plan import Plan
from jitterscope.doe.response import MeasureResponse
from jitterscope.doe.results import Analysis, ExperimentInfo, RunRecord
from jitterscope.errors import JitterscopeError
from jitterscope.humanize import count
from jitterscope.humanize import seconds as fmt_s
from jitterscope.journal import Journal
from jitterscope.session import Watchdog

EXPERIMENT_FORMAT = "jitterscope-doe"


def experiment_info(plan: Plan) -> ExperimentInfo:
    d = plan.design
    lv = d.levels()
    return {
        "format": EXPERIMENT_FORMAT,
        "format_version": 1,
        "name": plan.name,
        "plan_sha256_16": plan.digest,
        "host": sysinfo.host(),
        "kernel": sysinfo.kernel(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "response": {"describe": plan.response.describe(), "unit": plan.response.unit, "cpus": plan.cpus},
        "factors": [
            {"letter": f.letter, "name": f.name, "kind": f.kind, "low": f.low, "high": f.high} for f in plan.factors
        ],
        "design": d.describe(),
        "replications": plan.replications,
        "seed": plan.seed,
        "confidence": plan.confidence,
        "log": plan.log,
        "groups_by": plan.groups_by,
        "treatments": [
            {"index": i, "label": lab, "levels": {d.letters[j]: int(lv[i, j]) for j in range(d.k)}}
            for i, lab in enumerate(d.labels())
        ],
        "run_order": [[t, r] for t, r in run_order(d.n, plan.replications, plan.seed)],
    }


def describe_plan(plan: Plan) -> str:
    """The design stated up front: factors, levels, design, aliases, runs, estimate."""
    d = plan.design
    lines = [f"experiment {plan.name!r}: response = {plan.response.describe()}"]
    w = max(len(f.name) for f in plan.factors)
    for f in plan.factors:
        lines.append(f"  {f.letter}  {f.name:<{w}}  {f.kind:<15}  low(-) {f.low:<10}  high(+) {f.high}")
    if d.p:
        desc = d.describe()
        lines.append(
            f"design 2^({d.k}-{d.p}) fractional, resolution {roman(d.resolution())}: "
            f"generators {', '.join(desc['generators'])}; {desc['defining_relation']}"
        )
        # Every column that carries a main effect or a two-factor interaction, with its aliases.
        low_order = [e for e in d.effects() if min(len(a.lstrip("-")) for a in [e, *d.aliases(e)]) <= 2]
        lines.append("  aliases: " + "  ".join(d.alias_name(e) for e in low_order))
    else:
        lines.append(f"design 2^{d.k} full factorial")
    lines.append(
        f"{count(d.n, 'treatment')} x {count(plan.replications, 'replication')} = "
        f"{count(plan.runs, 'run')} in random order "
        f"(seed {plan.seed}); about {fmt_s(plan.estimate_s())}"
    )
    return "\n".join(lines)


def check_budget(plan: Plan, yes: bool) -> None:
    est = plan.estimate_s()
    if est > plan.budget_s and not yes:
        raise JitterscopeError(
            f"{count(plan.runs, 'run')} take about {fmt_s(est)}, "
            f"more than the plan's budget of {fmt_s(plan.budget_s)}: "
            f"add --yes to run anyway, or use fewer factors, a fractional design or fewer replications"
        )


def done_runs(out: Path) -> dict[int, RunRecord]:
    path = out / "runs.jsonl"
    done: dict[int, RunRecord] = {}
    if path.exists():
        for line in boundedio.read_text(path, "run log", boundedio.RUN_JSON_MAX).splitlines():
            try:
                rec = _RUN.validate_json(line)
            except ValidationError as err:
                if _torn(err):
                    continue  # a torn last line: that run did not finish
                raise JitterscopeError(f"{path}: a run record is not one doe writes: {_first(err)}") from None
            done[rec["run"]] = rec
    return done


def _drop_torn_tail(path: Path) -> None:
    """Cut a half-written last line (a kill during the append) so new lines start clean."""
    if not path.exists():
        return
    data = boundedio.read_bytes(path, "run log", boundedio.RUN_JSON_MAX)
    if data and not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])


def prepare_dir(plan: Plan, out: Path, resume: bool) -> ExperimentInfo:
    if resume:
        if not (out / "experiment.json").exists():
            raise JitterscopeError(f"nothing to resume in {out}: no experiment.json")
        info = _read_info(out / "experiment.json")
        if boundedio.read_text(out / "plan.yaml", "plan") != plan.text:
            raise JitterscopeError(
                f"the plan differs from the one {out} was started with; "
                f"resume with the same plan or start in another --out"
            )
        return info
    if out.exists() and any(out.iterdir()):
        raise JitterscopeError(f"{out} already exists: add --resume to continue it, or choose another --out")
    outpath.make_dir(out, "--out")  # no parents made, but for the default jitterscope-doe/
    info = experiment_info(plan)
    atomic.write_text(out / "plan.yaml", plan.text)
    atomic.write_text(out / "experiment.json", json.dumps(info, indent=2) + "\n")
    return info


def execute(plan: Plan, out: Path, resume: bool = False, stream: TextIO = sys.stderr) -> dict[int, RunRecord]:
    """Run every run not yet done; return all finished runs by run index."""
    info = prepare_dir(plan, out, resume)
    order = [tuple(x) for x in info["run_order"]]
    done = done_runs(out)
    _drop_torn_tail(out / "runs.jsonl")
    labels = plan.design.labels()
    lv = plan.design.levels()
    ctx = plan.context()
    fifo_factor = next((f for f in plan.factors if f.kind == "fifo"), None)
    apply_order = sorted(plan.factors, key=lambda f: APPLY_ORDER.get(f.kind, 9))
    todo = [i for i in range(len(order)) if i not in done]
    if done:
        print(f"resuming: {len(done)} of {len(order)} runs already done", file=stream)
    t_start = time.monotonic()
    per_run = plan.run_estimate_s()
    # One watchdog for the whole experiment: a kill -9 mid-treatment undoes that treatment's journal at once.
    dog = Watchdog().arm()
    with contextlib.ExitStack() as stack, open(out / "runs.jsonl", "a") as log:
        stack.callback(dog.disarm)
        for n_new, i in enumerate(todo):
            t, rep = order[i]
            signs = {f.letter: int(lv[t, j]) for j, f in enumerate(plan.factors)}
            levels = {f.name: f.level(signs[f.letter]) for f in plan.factors}
            run_dir = out / "measure" / f"run-{i:03d}"
            if run_dir.exists():  # left by a run that was interrupted: it never finished
                shutil.rmtree(run_dir)
            if isinstance(plan.response, MeasureResponse):
                run_dir.parent.mkdir(exist_ok=True)
            t0 = time.monotonic()
            started = datetime.now(timezone.utc).isoformat(timespec="seconds")
            fifo = fifo_factor.fifo_priority(levels[fifo_factor.name]) if fifo_factor else None
            try:
                with Journal(f"doe {plan.name} run {i} treatment {labels[t]}") as j:
                    for f in apply_order:
                        f.apply(levels[f.name], j, ctx)
                    if plan.settle_s:
                        time.sleep(plan.settle_s)
                    y, extra = plan.response.run(run_dir, fifo, j)
            except JitterscopeError as err:
                raise JitterscopeError(
                    f"run {i + 1} (treatment {labels[t]}): {err}; every change was undone, "
                    f"{count(len(done), 'finished run')} kept: fix it and add --resume"
                ) from None
            rec: RunRecord = {
                "run": i,
                "treatment": t,
                "label": labels[t],
                "rep": rep,
                "y": y,
                "levels": levels,
                "start": started,
                "seconds": round(time.monotonic() - t0, 3),
                **extra,
            }
            log.write(json.dumps(rec) + "\n")
            log.flush()
            os.fsync(log.fileno())
            done[i] = rec
            elapsed = time.monotonic() - t_start
            per_run = elapsed / (n_new + 1)
            left = per_run * (len(todo) - n_new - 1)
            complete = sum(
                1
                for tt in range(plan.design.n)
                if sum(1 for r in done.values() if r["treatment"] == tt) == plan.replications
            )
            print(
                f"run {len(done):>3}/{len(order)}  treatment {labels[t]:<8} rep {rep + 1}  "
                f"y = {y:.6g} {plan.response.unit}  | treatments done {complete}/{plan.design.n}  "
                f"| {fmt_s(left)} left",
                file=stream,
                flush=True,
            )
    return done


def load_experiment(out: Path) -> tuple[ExperimentInfo, dict[int, RunRecord]]:
    """experiment.json and the finished runs of an experiment directory."""
    path = Path(out) / "experiment.json"
    if not path.exists():
        raise JitterscopeError(f"{out} is not a doe experiment directory (no experiment.json)")
    return _read_info(path), done_runs(Path(out))


_INFO = TypeAdapter(ExperimentInfo)
_RUN = TypeAdapter(RunRecord)


def _first(err: ValidationError) -> str:
    e = err.errors()[0]
    return f"{'.'.join(map(str, e['loc'])) or 'the record'}: {e['msg']}"


def _torn(err: ValidationError) -> bool:
    """A line cut short by a crash is not JSON at all; a whole line of the wrong shape is an error."""
    return any(e["type"] == "json_invalid" for e in err.errors())


def _read_info(path: Path) -> ExperimentInfo:
    """experiment.json, checked field by field against what `experiment_info` writes."""
    raw = boundedio.read_json(path, "experiment record")
    if not isinstance(raw, dict) or raw.get("format") != EXPERIMENT_FORMAT:
        raise JitterscopeError(f"{path} is not a jitterscope doe experiment")
    try:
        return _INFO.validate_python(raw)
    except ValidationError as err:
        raise JitterscopeError(f"{path}: {_first(err)}") from None


def analyze_dir(
    out: Path, confidence: float | None = None, log: bool | None = None, groups_by: list[str] | None = None
) -> Analysis:
    """Analyse a finished experiment directory; plain data (see analysis.analyze)."""
    info, done = load_experiment(out)
    # scipy.stats, once the directory is known to hold an experiment: 1.1 s of the 1.8 s that refusing one
    # that is not took when it came first
    from jitterscope.doe.analysis import Data, analyze

    d = info["design"]
    design = Design(d["k"], [parse_generator(g, d["k"], d["p"]) for g in d["generators"]])
    reps = info["replications"]
    total = design.n * reps
    if len(done) < total:
        raise JitterscopeError(
            f"only {len(done)} of {total} runs finished in {out}; finish them with "
            f"`jitterscope doe run {Path(out) / 'plan.yaml'} --out {out} --resume`"
        )
    y = np.zeros((design.n, reps))
    ids: list[list[int]] = [[0] * reps for _ in range(design.n)]
    for rec in done.values():
        y[rec["treatment"], rec["rep"]] = rec["y"]
        ids[rec["treatment"]][rec["rep"]] = rec["run"]
    conf = confidence if confidence is not None else info.get("confidence", 0.95)
    use_log = log if log is not None else bool(info.get("log"))
    letters = [f["letter"] for f in info["factors"]]
    by = groups_by if groups_by is not None else info.get("groups_by")
    gb = [letters.index(g) for g in by] if by else None
    a = analyze(
        Data(design, [f["name"] for f in info["factors"]], y, ids, info["response"]["unit"]),
        confidence=conf,
        log=use_log,
        groups_by=gb,
    )
    for f, src in zip(a["factors"], info["factors"]):
        f["kind"], f["low"], f["high"] = src["kind"], src["low"], src["high"]
    a["experiment"] = {
        "name": info["name"],
        "host": info["host"],
        "kernel": info["kernel"],
        "response": info["response"]["describe"],
        "created": info["created"],
        "seed": info["seed"],
        "runs": total,
    }
    return a


def write_outputs(out: Path, a: Analysis) -> str:
    txt = render.text(a)
    atomic.write_text(out / "analysis.json", render.to_json(a) + "\n")
    atomic.write_text(out / "analysis.txt", txt)
    render.boxplot_svg(a, out / "boxplot.svg")
    return txt
