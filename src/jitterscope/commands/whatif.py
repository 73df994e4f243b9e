"""What would DVFS jitter compensation or an OS cache buy your program? Trace-driven, from its own traces.

  dvfs     replay a `jitterscope sync` run ideal, as recorded, and with the paper's DVFS controller
           (reactivity k, frequency table, transition stalls): run time, residual jitter, power, energy
  capture  record a program's memory accesses (valgrind lackey) into a trace file for `whatif cache`
  cache    a set-associative cache simulator (L2 + the paper's OS cache, overflow sharing, prefetch,
           selective pinning) fed with a captured trace and kernel bursts from a `measure` run

Every model assumption and default is in docs/commands/whatif.md (the spec's [impl] choices).

EXAMPLES
  jitterscope sync --out runs/xz -- xz -T2 -k data.bin
  jitterscope whatif dvfs runs/xz                              # k = 1, 2, 4 against ideal and recorded
  jitterscope whatif dvfs runs/xz --reactivity 1 --quantize ceil --plot dvfs.svg --json
  jitterscope whatif capture --out xz.trace -- xz -k -f small.bin
  jitterscope whatif cache xz.trace --os-trace runs/base        # kernel bursts from a measure run
  jitterscope whatif cache xz.trace --os-trace runs/base --overflow off --os-cache 0
"""

from __future__ import annotations

import argparse

from jitterscope import options
from jitterscope import whatif as C

HELP = {
    "dvfs": "Replay a sync run with the DVFS compensation controller (spec A.7, A.13).\n\nEXAMPLES\n"
    "  jitterscope whatif dvfs runs/xz\n  jitterscope whatif dvfs runs/xz --reactivity 1,2 --table 0.8:1.4:0.1"
    " --transition 0us\n  jitterscope whatif dvfs runs/xz --model physical --alpha 0.7 --plot f.svg "
    "--trace-out f.csv",
    "capture": "Run CMD under valgrind lackey and keep its data accesses as a trace for `whatif cache`.\n\n"
    "EXAMPLES\n  jitterscope whatif capture --out xz.trace -- xz -k -f small.bin\n"
    "  jitterscope whatif capture --out ls.trace --max-accesses 5e6 -- ls -lR /usr/share/doc",
    "cache": "Simulate the application's L2 with and without the OS cache, kernel bursts from a measure run.\n\n"
    "EXAMPLES\n  jitterscope whatif cache xz.trace --os-trace runs/base\n"
    "  jitterscope whatif cache xz.trace --os-trace runs/base --l2 256KiB,4way --prefetch 256 --json\n"
    "  jitterscope whatif cache xz.trace --os-rate 2000/s --os-duration 20us --pin on",
}


def _action(sub: argparse._SubParsersAction, name: str, summary: str) -> argparse.ArgumentParser:
    return options.add_action(sub, name, summary, HELP[name])


def _dvfs_args(a: argparse.ArgumentParser) -> None:
    a.add_argument("run", type=options.path_arg, metavar="SYNC_RUN", help="a run directory from `jitterscope sync`")
    a.add_argument("--subframe", default="330us", help="nominal work per subframe (default 330us, the paper's)")
    a.add_argument("--reactivity", default="1,2,4", help="reactivity factors k to compare (default 1,2,4)")
    a.add_argument(
        "--table",
        default=C.TABLE_SPEC,
        help=f"DVFS factors f/f0, LO:HI:STEP or a list; must hold 1.0 (default {C.TABLE_SPEC}, the paper's Table 3)",
    )
    a.add_argument("--transition", default="10us", help="core stall on each frequency change (default 10us: PLL lock)")
    a.add_argument(
        "--model",
        choices=C.MODELS,
        default="paper",
        help="tau(f): paper = all time scales with 1/f; physical = only the --alpha share does (default paper)",
    )
    a.add_argument(
        "--alpha",
        type=float,
        default=1.0,
        help="physical model: share of compute time that scales with the clock (default 1.0: CPU-bound)",
    )
    a.add_argument(
        "--quantize",
        choices=C.QUANTIZE,
        default="nearest",
        help="table entry for the raw factor: nearest (default; the paper's 0.95 dips) or ceil",
    )
    a.add_argument(
        "--warmup",
        type=int,
        default=90,
        help="subframes per thread at 1.0 before control starts (default 90, the paper's)",
    )
    a.add_argument(
        "--evictions",
        default="0",
        metavar="N|CACHE_JSON",
        help="L2-eviction term (spec A.6): "
        "application lines the kernel evicts per kernel burst, a number or a `whatif cache --json` result "
        "(its unified 'evicted by OS' per burst); booked on the jitter count as N x --mem-latency / "
        "--banks (default 0: off; a guest cannot observe evictions)",
    )
    a.add_argument(
        "--mem-latency",
        default="100ns",
        help="A.6's memory round trip t_mem (default 100ns: the paper's 300 cycles at 3 GHz)",
    )
    a.add_argument(
        "--banks",
        type=int,
        default=4,
        help="A.6's n_banks, overlapping misses (default 4: the spec's choice; the paper gives none)",
    )
    a.add_argument(
        "--plot", type=options.path_arg, metavar="SVG", help="write the frequency trace figure (Figs. 11-12 style)"
    )
    a.add_argument(
        "--trace-out", type=options.path_arg, metavar="CSV", help="write every subframe's factor (k, tid, start, ...)"
    )
    a.add_argument(
        "--apply",
        action="store_true",
        help="run the recorded program again, pinned at factor 1.0 then "
        "under the controller driving each CPU's cpufreq limits (journalled, restored on exit), and "
        "compare; needs cpufreq: skipped with the reason where it is absent",
    )
    a.add_argument(
        "--nominal",
        metavar="FREQ",
        help="--apply: the frequency of factor 1.0 (default: cpuinfo_max_freq "
        "/ the table's top factor, the paper's headroom)",
    )
    options.add_json(a, "the result as JSON")


def _cache_args(a: argparse.ArgumentParser) -> None:
    from jitterscope.whatif import cacheopts

    cacheopts.add_arguments(a)
    options.add_json(a, "the result as JSON")


def _capture_args(a: argparse.ArgumentParser) -> None:
    a.add_argument("--out", type=options.path_arg, required=True, metavar="TRACE", help="the trace file to write")
    a.add_argument(
        "--max-accesses",
        default="1e8",
        help="stop recording after this many data accesses (default 1e8; the program still runs to its end)",
    )
    a.add_argument("--instructions", action="store_true", help="also record instruction fetches")
    a.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD", help="the program to trace")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    _dvfs_args(_action(sub, "dvfs", "replay a sync run with DVFS jitter compensation"))
    _capture_args(_action(sub, "capture", "record a program's memory trace for `whatif cache`"))
    _cache_args(_action(sub, "cache", "simulate the OS cache on a captured trace and measured kernel bursts"))


def run(args: argparse.Namespace) -> int:
    from jitterscope.whatif import actions

    return int(getattr(actions, args.action)(args))
