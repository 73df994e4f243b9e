"""`tune verify`: measure (or take --before), apply the plan, measure again under the same options, compare.

Everything the user gave is checked before the baseline is measured; a plan
made from the baseline itself is checked right after it.  The changes are made
through this command's journal and stay there while the second run measures,
so Ctrl-C, an error or a crash in between leaves the machine as found.  At the
end they are kept as a `tune apply` would keep them (a record for `tune
revert`), or, with --revert, undone and re-read to prove it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitterscope import options, sysinfo
from jitterscope.config import validate
from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.journal import Journal
from jitterscope.measure.lifecycle import measure
from jitterscope.outpath import check_dir
from jitterscope.rundir import Run, base_meta, load_run, new_run_path, write_json
from jitterscope.tune import apply as ap
from jitterscope.tune import planfile, record, render_verify
from jitterscope.tune.apply import knob_source
from jitterscope.tune.plan import make_plan
from jitterscope.tune.verify_data import Applied, analyse

SETTLE_S = 0.3  # an IRQ moves at its next interrupt, a task at once
SETTLE_KNOBS = {"vm.stat_interval": lambda before: float(before) + 0.3}  # work already queued keeps its old delay


@dataclass(frozen=True)
class _Measure:
    """How the before and after runs are measured: as --before was, else from the options."""

    cpus: list[int]
    duration_ns: float
    threshold_ns: float
    priority: int | None
    buffer_kb: int


def _measure_opts(args: argparse.Namespace, before: Run | None, plan_cpus: list[int] | None) -> _Measure:
    if before is not None:
        o = before.meta.get("options", {})
        if not before.tracing:
            raise UsageError(
                f"--before {before.path}: measured without tracing; verify compares sources, so it needs a traced run"
            )
        return _Measure(
            cpus=before.cpus,
            duration_ns=float(o.get("duration_ns") or before.duration_ns),
            threshold_ns=float(o.get("threshold_ns", 1000.0)),
            priority=o.get("priority"),
            buffer_kb=int(o.get("buffer_kb", 4096)),
        )
    cpus = options.cpus(args) if args.cpus is not None or not plan_cpus else plan_cpus
    sysinfo.check_cpus(cpus)
    return _Measure(
        cpus=cpus,
        duration_ns=options.duration_ns(args),
        threshold_ns=options.threshold_ns(args),
        priority=options.priority(args),
        buffer_kb=options.buffer_kb(args),
    )


def _run(opts: _Measure, out: Path, label: str) -> Run:
    print(
        f"measuring {label}: CPU {','.join(map(str, opts.cpus))} for {opts.duration_ns / 1e9:g} s ...",
        file=sys.stderr,
        flush=True,
    )
    path = measure(
        opts.cpus,
        opts.duration_ns,
        opts.threshold_ns,
        out,
        trace=True,
        priority=opts.priority,
        buffer_kb=opts.buffer_kb,
        progress=True,
    )
    run = load_run(path)
    if run.meta.get("interrupted"):
        raise KeyboardInterrupt
    return run


def _only(plan: planfile.PlanFile, changes: list[Any]) -> planfile.PlanFile:
    """The baseline's plan cut to the --knob changes, each given the sources the plan expects it to act on
    (the planned factor only where the value is the planned one)."""
    by = {k.knob: k for k in plan.knobs}
    kept = []
    for c in changes:
        k = by.get(c.name)
        if k is None:
            continue
        c.sources = [{**knob_source(s), "factor": s.factor if k.value == c.value else None} for s in k.sources]
        kept.append(k.model_copy(update={"value": c.value}))
    return plan.model_copy(update={"knobs": kept})


def _settle(changes: list[Any]) -> float:
    return max([SETTLE_S] + [SETTLE_KNOBS[c.name](c.before) for c in changes if c.name in SETTLE_KNOBS])


def run_verify(args: argparse.Namespace) -> int:
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha {args.alpha} must be between 0 and 1")
    before = load_run(args.before, kinds=("measure",), purpose="tune verify --before") if args.before else None
    out = args.out or new_run_path(sysinfo.host(), "tune")
    if out.exists():
        raise UsageError(f"--out {out}: already exists; choose a new directory")
    if args.out is not None:
        check_dir(out, "--out")  # a directory the user names gets no parents made; the default's may
    # A PLAN is applied as it is (with any --knob on top); --knob alone takes its targets from the
    # baseline's own plan; neither: the baseline's whole plan.
    changes, skipped, _, plan_file = (
        ap.changes_of(args.plan, args.knob, args.force) if (args.plan or args.knob) else ([], [], [], None)
    )
    opts = _measure_opts(args, before, plan_file.cpus if plan_file else None)
    if os.geteuid() != 0:
        raise JitterscopeError("tune verify changes kernel settings: run it as root")
    out.mkdir(parents=args.out is None)
    if before is None:
        before = _run(opts, out / "before", "before")
    if plan_file is None:
        plan_file = validate(make_plan(before.path, args.move), planfile.PlanFile, f"plan from {before.path}")
        if args.knob:
            plan_file = _only(plan_file, changes)
        else:
            changes, skipped = ap.from_plan(plan_file)
    planfile.write(plan_file.model_dump(), out / "plan.yaml")
    if not changes:
        raise JitterscopeError("nothing to verify: the plan has no runtime knob to change (see `tune plan`)")
    with Journal("tune verify") as j:
        rows: list[Applied] = [
            {
                "knob": c.name,
                "before": c.before,
                "value": c.value,
                "changed": bool(c.knob.apply(j, c.value)),
                "now": c.knob.read(),
            }
            for c in changes
        ]
        time.sleep(_settle(changes))
        after = _run(opts, out / "after", "after")
        result = analyse(before, after, changes, args.alpha)
        rec = None if args.revert else record.persist(j, label="tune verify", out=str(out))
    if args.revert:
        result["reverted"] = [
            {"knob": c.name, "original": c.before, "now": c.knob.read(), "back": c.knob.read() == c.before}
            for c in changes
        ]
    result.update(
        {
            "before": str(before.path),
            "after": str(after.path),
            "out": str(out),
            "applied": rows,
            "skipped": skipped,
            "record": str(rec) if rec else None,
            "boot": {
                "params": plan_file.boot.params,
                "cmdline": plan_file.boot.cmdline,
                "bootloader": plan_file.boot.bootloader,
                "command": plan_file.boot.command,
            },
            "unaddressed": plan_file.unaddressed,
        }
    )
    render_verify.write_page(result, out / "verify.html")
    write_json(out / "summary.json", result)
    write_json(
        out / "meta.json",
        base_meta(
            kind="tune",
            id=out.name,
            host=sysinfo.host(),
            kernel=sysinfo.kernel(),
            command_line=sys.argv,
            start=after.meta.get("start"),
            duration_s=after.meta["duration_s"],
            cpus=opts.cpus,
            options={**dataclasses.asdict(opts), "alpha": args.alpha, "revert": args.revert},
            before=str(before.path),
            after=str(after.path),
            virtualization=after.meta.get("virtualization"),
        ),
    )  # last: now it is complete
    print(options.to_json(result) if args.json else render_verify.render_text(result))
    return 0 if result["ok"] else 1
