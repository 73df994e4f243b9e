"""Degradation reduction: how much of a bandwidth loss duty-cycling takes back (thesis Table 4.3).

A bandwidth table holds, per scenario (read, write, mixed) and number of cores
running, the bandwidth the measured core gets in each configuration (columns,
e.g. the thesis's A-E).  The row with one core is the core alone.  With n cores
the degradation is g = (B_1 - B_n) / B_1, both against the alone value of the
table *without* duty-cycling (Westmijze, Table 4.3: all 45 cells follow this,
including the real 0.0 of Read D at 4 cores, where both tables read 19.7), and
the reduction is (g_congested - g_protected) / g_congested x 100 %.  The
thesis's worked example (L1979-1985): write E falls from 15.1 to 4.2 GB/s
(72.1 %) congested and to 14.0 GB/s (7.2 %) duty-cycled: 89.9 % reduced.

The same code reads the thesis's Tables 4.1 and 4.2 (shipped in data/) and a
user's own measurements in the same CSV layout:

    scenario,cores,A,B,C,D,E
    read,1,11.5,11.5,19.9,19.9,19.8
    read,2,6.9,7.9,19.8,19.8,16.0
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

from jitterscope import boundedio, options
from jitterscope.errors import JitterscopeError

DATA = Path(__file__).parent / "data"
# {scenario: {cores: {config: GB/s}}}
Table = dict[str, dict[int, dict[str, float]]]


def read_table(path: Path) -> Table:
    """A bandwidth (or reduction) table from CSV; `#` lines are comments.  One-line errors."""
    text = boundedio.read_text(path, "table")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    rows = list(csv.reader(lines))
    if not rows or rows[0][:2] != ["scenario", "cores"] or len(rows[0]) < 3:
        raise JitterscopeError(f"{path}: header must be scenario,cores,<configuration>,... (e.g. A,B,C,D,E)")
    configs = [c.strip() for c in rows[0][2:]]
    out: Table = {}
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(rows[0]):
            raise JitterscopeError(f"{path}: row {i} has {len(row)} fields, the header {len(rows[0])}")
        try:
            cores = int(row[1])
            values = [float(v) for v in row[2:]]
        except ValueError:
            raise JitterscopeError(f"{path}: row {i}: cores must be an integer and bandwidths numbers") from None
        if cores < 1 or any(not math.isfinite(v) or v < 0 for v in values):
            raise JitterscopeError(f"{path}: row {i}: cores must be >= 1 and bandwidths finite and >= 0")
        out.setdefault(row[0].strip(), {})[cores] = dict(zip(configs, values))
    return out


def degradation(alone: float, value: float) -> float:
    """The share of the alone bandwidth lost: (B_1 - B_n) / B_1."""
    return (alone - value) / alone


def reduction(congested: Table, protected: Table) -> Table:
    """Per scenario, core count (> 1) and configuration: degradation reduction in %.

    None-free: a cell whose congested degradation is zero (nothing to reduce) is omitted."""
    out: Table = {}
    for scenario, rows in congested.items():
        if 1 not in rows:
            raise JitterscopeError(f"scenario {scenario!r}: the congested table has no 1-core (alone) row")
        if scenario not in protected:
            raise JitterscopeError(f"scenario {scenario!r} is missing from the duty-cycled table")
        for cores in sorted(c for c in rows if c > 1):
            if cores not in protected[scenario]:
                raise JitterscopeError(f"scenario {scenario!r}: the duty-cycled table has no {cores}-core row")
            for config, b_cong in rows[cores].items():
                alone = rows[1][config]
                g_cong = degradation(alone, b_cong)
                if g_cong == 0:
                    continue
                g_prot = degradation(alone, protected[scenario][cores][config])
                out.setdefault(scenario, {}).setdefault(cores, {})[config] = (g_cong - g_prot) / g_cong * 100
    return out


def thesis_tables() -> tuple[Table, Table, Table]:
    """The thesis's Tables 4.1, 4.2 and (as printed) 4.3."""
    return tuple(read_table(DATA / f"thesis_table_4_{i}.csv") for i in (1, 2, 3))  # type: ignore[return-value]


def render(table: Table, title: str) -> str:
    configs = list(next(iter(next(iter(table.values())).values())))
    lines = [title, f"{'scenario':10}{'cores':>6}" + "".join(f"{c:>8}" for c in configs)]
    for scenario, rows in table.items():
        for cores, cells in sorted(rows.items()):
            lines.append(
                f"{scenario:10}{cores:>6}"
                + "".join(f"{cells[c]:>8.1f}" if c in cells else f"{'-':>8}" for c in configs)
            )
    return "\n".join(lines)


def reduction_command(args: argparse.Namespace) -> int:

    if args.thesis:
        if args.congested or args.protected:
            raise JitterscopeError("give --thesis or --congested/--protected, not both")
        congested, protected, _ = thesis_tables()
    elif args.congested and args.protected:
        congested, protected = read_table(Path(args.congested)), read_table(Path(args.protected))
    else:
        raise JitterscopeError("protect reduction needs --congested CSV and --protected CSV (or --thesis)")
    red = reduction(congested, protected)
    if args.json:
        options.print_json({s: {str(c): cells for c, cells in rows.items()} for s, rows in red.items()})
    else:
        print(render(red, "Degradation reduction (%) by duty-cycling (thesis Table 4.3 layout)"))
    return 0
