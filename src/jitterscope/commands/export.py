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
from jitterscope.outpath import check_file


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", type=options.path_arg, metavar="RUN", help="run directory")
    p.add_argument("--format", "-f", required=True, choices=["perfetto", "loggopsim", "csv"])
    p.add_argument("-o", "--out", type=options.path_arg, required=True, metavar="FILE", help="file to write")
    p.add_argument("--cpu", type=int, help="loggopsim: only this CPU")
    options.add_json(p, "what was written as JSON")


def run(args: argparse.Namespace) -> int:
    from jitterscope import kinds
    from jitterscope.rundir import load_run

    exportable = tuple(k.name for k in kinds.all() if k.exporters)
    r = load_run(args.run, kinds=exportable, purpose="export")
    if args.cpu is not None and args.format != "loggopsim":
        raise JitterscopeError("--cpu applies to --format loggopsim only")
    check_file(args.out, "-o")
    kind = r.spec
    exporter = kind.exporters.get(args.format)
    if exporter is None:
        hint = kind.export_hint.format(run=args.run)
        raise JitterscopeError(
            f"{args.run} is a {r.kind} run: it exports as --format {' or '.join(kind.exporters)} only"
            + (f" ({hint})" if hint else "")
        )
    try:
        res = exporter.write(r, args.out, args.cpu)
    except OSError as err:
        raise JitterscopeError(f"{args.out}: cannot write ({err.strerror})") from None
    if args.json:
        options.print_json(res)
    else:
        print(exporter.describe(res))
    return 0
