"""The `whatif` actions: check every input, run the model, render (commands/whatif.py parses)."""

from __future__ import annotations

import argparse
import csv
from typing import Any

from jitterscope import options, outpath, plotting
from jitterscope.errors import UsageError
from jitterscope.rundir import load_run
from jitterscope.units import parse_count_list, parse_duration_ns
from jitterscope.whatif import controller as C
from jitterscope.whatif.dvfs import DvfsOptions, apply_status
from jitterscope.whatif.dvfs import dvfs as run_dvfs
from jitterscope.whatif.program import load_program
from jitterscope.whatif.render import render_dvfs


def dvfs_options(args: argparse.Namespace) -> DvfsOptions:
    ks = parse_count_list(args.reactivity, "--reactivity")
    if not ks or min(ks) < 1 or len(ks) > 16:
        raise UsageError(f"--reactivity {args.reactivity!r}: one to 16 integers >= 1, e.g. 1,2,4")
    if not 0.0 < args.alpha <= 1.0:
        raise UsageError(f"--alpha {args.alpha}: a share from 0 (excluded) to 1")
    if args.warmup < 0:
        raise UsageError(f"--warmup {args.warmup}: a number of subframes >= 0")
    ctl = C.Controller(table=tuple(float(x) for x in C.parse_table(args.table)), model=args.model,
                       alpha=args.alpha, quantize=args.quantize,
                       transition_ns=parse_duration_ns(args.transition, what="--transition", allow_zero=True))
    sub = parse_duration_ns(args.subframe, what="--subframe")
    if sub < 10_000 or sub <= 2 * ctl.transition_ns:
        raise UsageError(f"--subframe {args.subframe}: at least 10us and more than twice --transition")
    return DvfsOptions(ctl, tuple(dict.fromkeys(ks)), int(sub), args.warmup)


def dvfs(args: argparse.Namespace) -> int:
    o = dvfs_options(args)
    for path, what in ((args.plot, "--plot"), (args.trace_out, "--trace-out")):
        if path is not None:
            outpath.check_file(path, what)
    run = load_run(args.run, kinds=("sync",), purpose="whatif dvfs")
    res, trace = run_dvfs(load_program(run), o)
    if args.apply:
        res["apply"] = apply_status()
    if args.plot is not None:
        plotting.save(plotting_figure(trace, o), args.plot)
    if args.trace_out is not None:
        with open(args.trace_out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(trace[0]) if trace else ["k"])
            w.writeheader()
            w.writerows(trace)
    if args.json:
        options.print_json(res)
    else:
        print(render_dvfs(res, str(args.run)))
    return 0


def plotting_figure(trace: list[dict[str, Any]], o: DvfsOptions) -> Any:
    from jitterscope.whatif.plots import factor_trace

    return factor_trace(trace, list(o.ctl.table), "DVFS factor per subframe")
