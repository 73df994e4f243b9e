"""The `whatif` actions: check every input, run the model, render (commands/whatif.py parses)."""

from __future__ import annotations

import argparse
import csv
import os
import re
from pathlib import Path
from typing import Any

from jitterscope import boundedio, options, outpath, plotting
from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.rundir import load_run
from jitterscope.units import parse_count_list, parse_duration_ns
from jitterscope.whatif import controller as C
from jitterscope.whatif.dvfs import DvfsOptions
from jitterscope.whatif.dvfs import dvfs as run_dvfs
from jitterscope.whatif.program import load_program
from jitterscope.whatif.render import render_dvfs
from jitterscope.whatif.results import TraceRow


def dvfs_options(args: argparse.Namespace) -> DvfsOptions:
    ks = parse_count_list(args.reactivity, "--reactivity")
    if not ks or min(ks) < 1 or len(ks) > 16:
        raise UsageError(f"--reactivity {args.reactivity!r}: one to 16 integers >= 1, e.g. 1,2,4")
    if not 0.0 < args.alpha <= 1.0:
        raise UsageError(f"--alpha {args.alpha}: a share from 0 (excluded) to 1")
    if args.warmup < 0:
        raise UsageError(f"--warmup {args.warmup}: a number of subframes >= 0")
    ctl = C.Controller(
        table=tuple(float(x) for x in C.parse_table(args.table)),
        model=args.model,
        alpha=args.alpha,
        quantize=args.quantize,
        transition_ns=parse_duration_ns(args.transition, what="--transition", allow_zero=True),
    )
    sub = parse_duration_ns(args.subframe, what="--subframe")
    if sub < 10_000 or sub <= 2 * ctl.transition_ns:
        raise UsageError(f"--subframe {args.subframe}: at least 10us and more than twice --transition")
    return DvfsOptions(ctl, tuple(dict.fromkeys(ks)), int(sub), args.warmup, evict_ns(args))


def nominal_khz(text: str | None) -> int | None:
    """--nominal: the frequency of factor 1.0 (e.g. 3GHz, 2400MHz, 2400000kHz)."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([0-9.]+)\s*(ghz|mhz|khz)\s*", text.lower())
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"--nominal {text!r}: a frequency with its unit, e.g. 3GHz or 2400MHz")
    return int(round(float(m.group(1)) * {"ghz": 1e6, "mhz": 1e3, "khz": 1.0}[m.group(2)]))


def evictions_per_burst(text: str) -> float:
    """--evictions: a number, or a `whatif cache --json` result (unified L2: app lines evicted by the OS / bursts)."""
    try:
        n = float(text)
    except ValueError:
        path = Path(text)
        try:
            r = boundedio.read_json(path, "whatif cache result")
            n = r["unified"]["app_evicted_by_os"] / max(int(r["bursts"]), 1)
        except JitterscopeError as err:
            raise UsageError(f"--evictions {text!r}: not a number, and {err}") from None
        except (ValueError, KeyError, TypeError):
            raise UsageError(
                f"--evictions {text!r}: not a number nor a `whatif cache --json` result "
                "(needs unified.app_evicted_by_os and bursts)"
            ) from None
    if not 0 <= n < 1e9 or n != n:
        raise UsageError(f"--evictions {text!r}: evictions per kernel burst must be >= 0")
    return n


def evict_ns(args: argparse.Namespace) -> float:
    """A.6: J_evict = E x t_mem / n_banks, per kernel burst."""
    n = evictions_per_burst(str(args.evictions))
    t_mem = parse_duration_ns(args.mem_latency, what="--mem-latency", allow_zero=True)
    if not 1 <= args.banks <= 1024:
        raise UsageError(f"--banks {args.banks}: a number of memory banks from 1 to 1024")
    return n * t_mem / args.banks


def dvfs(args: argparse.Namespace) -> int:
    o = dvfs_options(args)
    for path, what in ((args.plot, "--plot"), (args.trace_out, "--trace-out")):
        if path is not None:
            outpath.check_file(path, what)
    run = load_run(args.run, kinds=("sync",), purpose="whatif dvfs")
    res, trace = run_dvfs(load_program(run), o, want_trace=args.plot is not None or args.trace_out is not None)
    if args.apply:
        from jitterscope.whatif.apply import apply

        cmd = [str(x) for x in run.meta.get("command") or []]
        if not cmd:
            raise UsageError(f"{args.run}: the sync run does not record its command: --apply cannot run it again")
        res["apply"] = apply(
            cmd, run.cpus or list(range(os.cpu_count() or 1)), o.ctl, o.subframe_ns, nominal_khz(args.nominal)
        )
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


def plotting_figure(trace: list[TraceRow], o: DvfsOptions) -> Any:
    from jitterscope.whatif.plots import factor_trace

    return factor_trace(trace, list(o.ctl.table), "DVFS factor per subframe")


def _remedy_text(args: argparse.Namespace) -> str:
    parts = [f"L2 {args.l2}", f"L1 {args.l1}"]
    parts.append(
        "no OS cache"
        if args.os_cache.strip().lower() in ("0", "off", "none")
        else f"OS cache {args.os_cache}, overflow {args.overflow}, flush {args.flush}"
    )
    if args.prefetch:
        parts.append(f"prefetch {args.prefetch} lines")
    if args.pin == "on":
        parts.append("selective pinning")
    return "; ".join(parts)


def cache(args: argparse.Namespace) -> int:
    from jitterscope.whatif import cacheopts, memtrace
    from jitterscope.whatif.cache import whatif_cache
    from jitterscope.whatif.render import render_cache

    o = cacheopts.config(args)
    tl = cacheopts.timeline(args)
    trace = memtrace.load(args.trace)
    if len(trace) == 0:
        raise UsageError(f"{args.trace}: the trace holds no access")
    res = whatif_cache(trace, tl, o, progress=not args.json)
    res["remedy_text"] = _remedy_text(args)
    if args.json:
        options.print_json(res)
    else:
        print(render_cache(res, str(args.trace), res["remedy_text"]))
    return 0


def capture(args: argparse.Namespace) -> int:
    from jitterscope.humanize import number
    from jitterscope.whatif import memtrace

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise UsageError("give the program to trace after --, e.g. whatif capture --out t.npy -- ls")
    limit = parse_count_list(args.max_accesses, "--max-accesses")
    if len(limit) != 1 or limit[0] < 1:
        raise UsageError(f"--max-accesses {args.max_accesses!r}: one number >= 1, e.g. 1e8")
    outpath.check_file(args.out, "--out")
    info = memtrace.capture(cmd, args.out, limit[0], args.instructions)
    print(
        f"trace {args.out}: {number(info['accesses'])} accesses ({number(info['lines'])} distinct 256 B blocks)"
        f"{', truncated at --max-accesses' if info['truncated'] else ''}; {cmd[0]} exited with {info['exit_code']}"
    )
    return 0
