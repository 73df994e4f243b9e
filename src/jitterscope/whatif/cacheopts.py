"""The options of `whatif cache`: cache geometry, the OS cache and its policies, the kernel-burst model."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

from jitterscope.errors import UsageError
from jitterscope.units import NUMBER, parse_duration_ns, parse_size

if TYPE_CHECKING:
    from jitterscope.whatif import kernel as K
    from jitterscope.whatif.cache import CacheOptions

PIN_PCT = 95  # App. F.2: the current level has priority for the first 95% of an epoch
PREFETCH_PCT = 90  # App. F.1: prefetch tau = 10% of the predicted epoch before its end
ACTIVE_MULT = 256  # App. F.1: active = touched within 256 x the mean interval between L2 accesses
EMA_SHIFT = 3  # App. F.1 [impl]: epoch predictor alpha = 1/8


def add_arguments(a: argparse.ArgumentParser) -> None:
    a.add_argument(
        "trace",
        type=Path,
        metavar="PROGRAM_TRACE",
        help="a trace from `whatif capture` (or a lackey --trace-mem=yes log)",
    )
    a.add_argument(
        "--os-trace",
        type=Path,
        metavar="RUN",
        help="a `measure` run: its kernel activity (per source: when, how long) places the kernel bursts",
    )
    a.add_argument(
        "--os-cpu",
        type=int,
        metavar="CPU",
        help="which measured CPU's kernel activity (default: the lowest with activity)",
    )
    a.add_argument(
        "--os-rate",
        metavar="N/s",
        help="without --os-trace: one synthetic kernel source, N bursts per second (e.g. 1000/s)",
    )
    a.add_argument("--os-duration", default="20us", help="synthetic bursts' duration (default 20us)")
    a.add_argument(
        "--l1", default="32KiB,2way,32B", help="private L1 in front of L2, or 'off' (default 32KiB,2way,32B: Table 2)"
    )
    a.add_argument("--l2", default="256KiB,4way", help="the application L2 (default 256KiB,4way, 64 B lines: Table 2)")
    a.add_argument(
        "--os-cache", default="64KiB,4way", help="the OS cache beside L2, or 0 for none (default 64KiB,4way: Table 2)"
    )
    a.add_argument(
        "--overflow",
        choices=("on", "off"),
        default="on",
        help="overflow sharing between L2 and the OS cache (default on)",
    )
    a.add_argument(
        "--flush",
        choices=("switch", "never"),
        default="switch",
        help="flush the OS cache and every alien line at each switch back to the application (default switch)",
    )
    a.add_argument(
        "--prefetch",
        type=int,
        default=0,
        metavar="LINES",
        help="prefetch buffer of LINES lines for application lines the OS evicts (default 0: off; the paper's 256)",
    )
    a.add_argument("--pin", choices=("on", "off"), default="off", help="selective pinning (App. F.2; default off)")
    a.add_argument("--footprint", default="48KiB", help="kernel memory one source's bursts sweep (default 48KiB)")
    a.add_argument(
        "--access-time",
        default="1ns",
        help="time per memory access of the program at native speed: maps trace position to time (default 1ns)",
    )
    a.add_argument(
        "--miss-penalty",
        default="100ns",
        help="memory round trip for the slowdown (default 100ns: 300 cycles at 3 GHz)",
    )
    a.add_argument(
        "--per-source",
        type=int,
        default=5,
        metavar="N",
        help="simulate each of the N biggest kernel sources alone for its own share (default 5; 0: off)",
    )


def config(args: argparse.Namespace) -> CacheOptions:
    """Every option checked (one line, exit 2, on bad input) -> the simulation's options."""
    # numpy and pyarrow load here, not at import: add_arguments runs whenever the parser is built.
    from jitterscope.whatif import cachesim as CS
    from jitterscope.whatif.cache import CacheOptions, unified_of

    l1 = CS.parse_geometry(args.l1, "--l1", line=32, allow_off=True)
    l2 = CS.parse_geometry(args.l2, "--l2")
    osc = CS.parse_geometry(args.os_cache, "--os-cache", allow_off=True)
    assert l2 is not None
    if args.prefetch < 0 or args.prefetch > 1 << 20:
        raise UsageError(f"--prefetch {args.prefetch}: a number of lines from 0 to {1 << 20}")
    if args.per_source < 0:
        raise UsageError(f"--per-source {args.per_source}: a number of sources >= 0")
    cfg = CS.Config(
        l1_sets=l1.sets if l1 else 0,
        l1_ways=l1.ways if l1 else 0,
        l1_line_shift=l1.line.bit_length() - 1 if l1 else 0,
        l2_sets=l2.sets,
        l2_ways=l2.ways,
        os_sets=osc.sets if osc else 0,
        os_ways=osc.ways if osc else 0,
        overflow=int(args.overflow == "on"),
        flush=int(args.flush == "switch"),
        migrate_back=1,
        prefetch_lines=args.prefetch,
        pin=int(args.pin == "on"),
        pin_pct=PIN_PCT,
        prefetch_pct=PREFETCH_PCT,
        active_mult=ACTIVE_MULT,
        ema_shift=EMA_SHIFT,
    )
    return CacheOptions(
        cfg,
        unified_of(cfg),
        parse_duration_ns(args.access_time, what="--access-time"),
        parse_duration_ns(args.miss_penalty, what="--miss-penalty"),
        parse_size(args.footprint, "--footprint"),
        args.per_source,
    )


def timeline(args: argparse.Namespace) -> K.Timeline:
    from jitterscope.whatif import kernel as K  # numpy and pyarrow: see config()

    if args.os_trace is not None and args.os_rate is not None:
        raise UsageError("give --os-trace RUN or --os-rate, not both")
    if args.os_trace is not None:
        return K.from_run(args.os_trace, args.os_cpu)
    if args.os_rate is None:
        raise UsageError("where does the kernel run? give --os-trace RUN (a measure run) or --os-rate N/s")
    m = re.fullmatch(rf"\s*({NUMBER})\s*(/s)?\s*", args.os_rate)
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"--os-rate {args.os_rate!r}: bursts per second, e.g. 1000/s")
    return K.synthetic(float(m.group(1)), parse_duration_ns(args.os_duration, what="--os-duration"))
