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
  jitterscope analyze runs/long --jobs 8     # the trace's CPUs in 8 processes
"""

from __future__ import annotations

import argparse

from jitterscope import options
from jitterscope.errors import JitterscopeError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="DIR", type=options.path_arg, help="run directory holding a raw capture")
    p.add_argument("--no-report", action="store_true", help="do not write report.html into the run")
    p.add_argument(
        "--jobs",
        metavar="N",
        type=_jobs,
        default=None,
        help="analyse the trace's CPUs in N processes (default: one per CPU this process may use)",
    )
    options.add_json(p, "summary.json")


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of processes, at least 1, got {text!r}")
    return n


def run(args: argparse.Namespace) -> int:
    from jitterscope import kinds, rundir, session

    rundir.require_run_dir(args.run)
    busy = session.recording(args.run)
    if busy is not None:
        raise JitterscopeError(
            f"{args.run}: still being recorded (jitterscope pid {busy}); analyze it once that run has ended, "
            f"if it does not finish the run itself"
        )
    recoveries = sorted((k.recovery for k in kinds.all() if k.recovery), key=lambda r: r.last)
    for recovery in recoveries:  # each kind recognises its own raw capture (kinds.py)
        if recovery.finds(args.run):
            return recovery.analyze(args)
    raise JitterscopeError(f"{args.run}: nothing to analyse (no kind of run recognises its raw capture)")
