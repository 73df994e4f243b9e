"""What each `jitterscope tune ACTION` does with its parsed arguments (commands/tune.py declares them)."""

from __future__ import annotations

import argparse

from jitterscope import options, sysinfo
from jitterscope.errors import UsageError
from jitterscope.tune import render
from jitterscope.tune.records import ApplyResult, RecordState


def audit(args: argparse.Namespace) -> int:
    from jitterscope.tune.audit import audit as run_audit

    cpus = options.cpus(args)
    sysinfo.check_cpus(cpus)
    a = run_audit(cpus)
    print(options.to_json(a) if args.json else render.render_audit(a))
    return 0


def plan(args: argparse.Namespace) -> int:
    from jitterscope.outpath import check_file
    from jitterscope.tune import planfile
    from jitterscope.tune.plan import make_plan

    if args.out is not None:
        check_file(args.out, "--out")
    p = make_plan(args.run, args.move)
    if args.out is not None:
        planfile.write(p, args.out)
    print(options.to_json(p) if args.json else render.render_plan(p))
    if args.out is not None and not args.json:
        print(
            f"\nPlan written to {args.out}: `jitterscope tune verify {args.out} --before {args.run}` applies it "
            f"and measures the effect"
        )
    return 0


def apply(args: argparse.Namespace) -> int:
    from jitterscope.tune import apply as ap

    changes, skipped, boot, _ = ap.changes_of(args.plan, args.knob, args.force)
    if args.boot and not boot:
        raise UsageError("--boot: the plan has no boot parameters" if args.plan else "--boot needs a PLAN file")
    if args.boot_root is not None and not args.boot:
        raise UsageError("--boot-root goes with --boot")
    if args.boot_root is not None and not args.boot_root.is_dir():
        raise UsageError(f"--boot-root {args.boot_root}: no such directory")
    r: ApplyResult
    if args.dry_run:
        r = {
            "rows": [{"knob": c.name, "before": c.before, "value": c.value, "now": c.before} for c in changes],
            "skipped": skipped,
            "boot_params": boot,
            "record": None,
        }
    else:
        r = ap.apply_changes(
            changes,
            "tune apply",
            boot if args.boot else None,
            args.boot_root,
            plan=str(args.plan) if args.plan else None,
        )
        r["skipped"], r["boot_params"] = skipped, [] if args.boot else boot
    print(options.to_json(r) if args.json else render.render_apply(r, args.dry_run))
    return 0


def verify(args: argparse.Namespace) -> int:
    from jitterscope.tune.verify import run_verify

    return run_verify(args)


def _show_records(args: argparse.Namespace, key: str, recs: list[RecordState], title: str, empty: str) -> None:
    if args.json:
        options.print_json({key: recs})
    else:
        print("\n\n".join(render.render_rows(r, title) for r in recs) if recs else empty)


def revert(args: argparse.Namespace) -> int:
    from jitterscope.tune.revert import revert as run_revert

    done = run_revert(args.all, args.record)
    _show_records(args, "reverted", done, "Reverted", "nothing to revert: tune has no changes on record")
    complete = all(r["complete"] for r in done)
    if not complete and not args.json:
        print("\nSome knobs are not back (see above); they stay on record for `tune status`")
    return 0 if complete else 1


def status(args: argparse.Namespace) -> int:
    from jitterscope.tune.revert import status as run_status

    _show_records(args, "records", run_status(), "Record", "tune has no changes on record")
    return 0
