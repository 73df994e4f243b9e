"""The options of `whatif cache`: cache geometry, the OS cache and its policies, the kernel-burst model."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(a: argparse.ArgumentParser) -> None:
    a.add_argument("trace", type=Path, metavar="PROGRAM_TRACE", help="a trace from `whatif capture` (or a "
                   "lackey --trace-mem=yes log)")
    a.add_argument("--os-trace", type=Path, metavar="RUN", help="a `measure` run: its kernel activity (per "
                   "source: when, how long) places the kernel bursts")
    a.add_argument("--os-rate", metavar="N/s", help="without --os-trace: one synthetic kernel source, N bursts per "
                   "second (e.g. 1000/s)")
    a.add_argument("--os-duration", default="20us", help="synthetic bursts' duration (default 20us)")
    a.add_argument("--l1", default="32KiB,2way,32B", help="private L1 in front of L2, or 'off' (default "
                   "32KiB,2way,32B: Table 2)")
    a.add_argument("--l2", default="256KiB,4way", help="the application L2 (default 256KiB,4way, 64 B lines: Table 2)")
    a.add_argument("--os-cache", default="64KiB,4way", help="the OS cache beside L2, or 0 for none (default "
                   "64KiB,4way: Table 2)")
    a.add_argument("--overflow", choices=("on", "off"), default="on", help="overflow sharing between L2 and the "
                   "OS cache (default on)")
    a.add_argument("--flush", choices=("switch", "never"), default="switch", help="flush the OS cache and every "
                   "alien line at each switch back to the application (default switch)")
    a.add_argument("--prefetch", type=int, default=0, metavar="LINES", help="prefetch buffer of LINES lines for "
                   "application lines the OS evicts (default 0: off; the paper's 256)")
    a.add_argument("--pin", choices=("on", "off"), default="off", help="selective pinning (App. F.2; default off)")
    a.add_argument("--footprint", default="48KiB", help="kernel memory one source's bursts sweep (default 48KiB)")
    a.add_argument("--access-time", default="1ns", help="time per memory access of the program at native "
                   "speed: maps trace position to time (default 1ns)")
    a.add_argument("--miss-penalty", default="100ns", help="memory round trip for the slowdown (default 100ns: "
                   "300 cycles at 3 GHz)")
    a.add_argument("--per-source", type=int, default=5, metavar="N", help="simulate each of the N biggest kernel "
                   "sources alone for its own share (default 5; 0: off)")
