"""Export a run for other tools: Perfetto trace, LogGOPSim noise trace, or CSV.

  perfetto   Chrome/Perfetto trace JSON: a track per CPU, each detour with the
             kernel activity inside it nested below; open in ui.perfetto.dev
  loggopsim  LogGOPSim noise trace: `start_ns<TAB>duration_ns` per detour, `#`
             comments; one file per CPU (FILE.cpuN.ext) unless --cpu or 1 CPU
  csv        one row per detour: cpu, start_ns, duration_ns, main source, all sources

A sync run (`jitterscope sync`) exports as perfetto only: a track per thread
with its waits and jitter intervals (causes as args), arrows from each release
to the wait it ended, and per-CPU kernel tracks of what ran during them.
A cluster run exports node by node: a Perfetto process per node, a LogGOPSim
file per node (FILE.HOST.cpuN.ext), and a first CSV column `node` (host:cpu).

EXAMPLES
  jitterscope export RUN --format perfetto -o run.json
  jitterscope export RUN --format loggopsim --cpu 1 -o noise-cpu1.txt
  jitterscope export RUN --format csv -o detours.csv
  jitterscope export SYNC_RUN --format perfetto -o sync.json   # threads, waits, kernel causes
"""

from __future__ import annotations

import argparse

from jitterscope import options
from jitterscope.errors import JitterscopeError
from jitterscope.humanize import count
from jitterscope.outpath import check_file


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", type=options.path_arg, metavar="RUN", help="run directory")
    p.add_argument("--format", "-f", required=True, choices=["perfetto", "loggopsim", "csv"])
    p.add_argument("-o", "--out", type=options.path_arg, required=True, metavar="FILE", help="file to write")
    p.add_argument("--cpu", type=int, help="loggopsim: only this CPU")
    options.add_json(p, "what was written as JSON")


def run(args: argparse.Namespace) -> int:
    from jitterscope.export import write_csv, write_loggopsim, write_perfetto
    from jitterscope.rundir import load_run

    r = load_run(args.run, kinds=("measure", "cluster", "sync"), purpose="export")  # a new kind adds itself
    if args.cpu is not None and args.format != "loggopsim":
        raise JitterscopeError("--cpu applies to --format loggopsim only")
    check_file(args.out, "-o")
    if r.kind == "sync":
        return _export_sync(r, args)
    try:
        if args.format == "perfetto":
            res = write_perfetto(r, args.out)
        elif args.format == "loggopsim":
            res = write_loggopsim(r, args.out, args.cpu)
        else:
            res = write_csv(r, args.out)
    except OSError as err:
        raise JitterscopeError(f"{args.out}: cannot write ({err.strerror})") from None
    if args.json:
        options.print_json(res)
    else:
        print(f"{count(res['detours'], 'detour')} written as {res['format']}: {', '.join(res['files'])}")
    return 0


def _export_sync(r, args: argparse.Namespace) -> int:  # noqa: ANN001 (a rundir.Run)
    """A sync run: threads, waits and kernel causes on one Perfetto timeline (sync/perfetto.py)."""
    from jitterscope.sync.perfetto import write_sync_perfetto

    if args.format != "perfetto":
        raise JitterscopeError(
            f"{args.run} is a sync run: it exports as --format perfetto only (its tables are "
            f"Parquet already: {args.run}/jitter.parquet, waits.parquet)"
        )
    try:
        res = write_sync_perfetto(r, args.out)
    except OSError as err:
        raise JitterscopeError(f"{args.out}: cannot write ({err.strerror})") from None
    if args.json:
        options.print_json(res)
    else:
        print(
            f"{count(res['waits'], 'wait')} and {count(res['jitter'], 'jitter interval')} written as perfetto: "
            f"{', '.join(res['files'])}"
        )
    return 0
