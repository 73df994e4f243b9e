"""Finish a run that was cut short: rebuild it from the raw capture that survived.

`measure` writes its raw data first (the probe's records, the kernel trace's
pages, the run's metadata) and keeps it until the analysed run is complete.
If the measurement or its analysis was interrupted — kill -9, a closed
terminal (SIGHUP), a second Ctrl-C, disk full, a killed MPI rank — the run
directory still holds that raw capture, and this command builds the same
tables, summary.json and report.html a finished measurement writes.  It says
what could not be recovered (for example the last 10 ms of a killed probe);
the list is also kept in meta.json under `recovered.missing`.

Exit code 0 when the run is complete afterwards (also when it already was);
2 when nothing can be rebuilt, with the reason.

EXAMPLES
  jitterscope analyze jitterscope-runs/20250101T120000Z-node1
  jitterscope analyze runs/killed --json     # the summary as JSON
  jitterscope analyze /var/tmp/js-kept/rank1 --no-report
"""

from __future__ import annotations

import argparse

from jitterscope import options
from jitterscope.errors import JitterscopeError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="DIR", type=options.path_arg, help="run directory holding a raw capture")
    p.add_argument("--no-report", action="store_true", help="do not write report.html into the run")
    options.add_json(p, "summary.json")


def run(args: argparse.Namespace) -> int:
    from jitterscope.measure.lifecycle import write_report_or_warn
    from jitterscope.measure.recover import analyze, is_complete
    from jitterscope.measure.render import render_summary
    from jitterscope.rundir import load_run

    if not args.run.is_dir():
        raise JitterscopeError(f"{args.run}: no such run directory")
    if (args.run / "sync-raw" / "meta.json").exists() and not (args.run / "summary.json").exists():
        return _sync(args)  # a sync run whose jitterscope was killed while CMD ran (sync/runner.py)
    if (args.run / "raw" / "meta.json").exists():  # a pipeline run cut short (pipeline/build.py)
        from jitterscope.pipeline.actions import do_analyze

        return do_analyze(args)
    missing = None if is_complete(args.run) else analyze(args.run)
    if missing is None:  # complete already (or another jitterscope finished it meanwhile)
        run = load_run(args.run)
        if args.json:
            options.print_json(run.summary)
        else:
            print(f"{args.run}: already a complete run; nothing to analyse")
        return 0
    if not args.no_report:
        write_report_or_warn(args.run)
    run = load_run(args.run)
    if args.json:
        options.print_json(run.summary)
        return 0
    print(render_summary(run.summary, str(args.run), run.meta))
    if missing:
        print("\nRecovered from a cut-short run; not recovered:")
        for m in missing:
            print(f"  - {m}")
    else:
        print("\nRecovered from a cut-short run; nothing was lost.")
    if (args.run / "report.html").exists():
        print(f"Report: {args.run / 'report.html'}")
    return 0


def _sync(args: argparse.Namespace) -> int:
    from jitterscope.rundir import load_run
    from jitterscope.sync.render import render
    from jitterscope.sync.runner import analyze_cut_short

    missing = analyze_cut_short(args.run, report=not args.no_report)
    run = load_run(args.run, kinds=("sync",))
    if args.json:
        options.print_json(run.summary)
        return 0
    print(render(run.summary, str(args.run)))
    print("\nRecovered from a cut-short sync run; not recovered:\n" + "\n".join(f"  - {m}" for m in missing))
    return 0
