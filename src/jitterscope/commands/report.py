"""Write a run's self-contained HTML report (figures also saved as SVG beside it).

The report shows the run's header (host, kernel, command line, CPUs, duration,
tracing state, lost events), noise per CPU, the top sources with shares and
periods, detour-duration histograms per CPU on log scales, noise over time per
CPU stacked by source kind, the duration distribution of each major source,
the top chains and the unexplained part.  It needs no network to view.
Prints the report's path.

EXAMPLES
  jitterscope report jitterscope-runs/20240501T120000Z-node7
  jitterscope report RUN --out /tmp/node7.html --open
"""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from pathlib import Path

from jitterscope import options


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", type=options.path_arg, metavar="RUN", help="run directory")
    p.add_argument(
        "--out",
        "-o",
        type=options.path_arg,
        metavar="FILE",
        help="HTML file to write (default: RUN/report.html); SVGs go beside it",
    )
    p.add_argument("--open", action="store_true", help="open the report in a web browser")


def run(args: argparse.Namespace) -> int:
    from jitterscope.report.pages import write_report

    path = write_report(args.run, args.out)
    print(path)
    if args.open:
        why = open_in_browser(path)
        if why:
            print(f"jitterscope: note: report not opened: {why}; open {path} in a browser yourself", file=sys.stderr)
    return 0


def open_in_browser(path: Path) -> str | None:
    """Open the page; None when a browser took it, else why not (the report is written either way)."""
    if not any(os.environ.get(v) for v in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY")):
        return "no graphical session ($DISPLAY and $WAYLAND_DISPLAY unset) and no $BROWSER"
    try:
        if webbrowser.open(path.resolve().as_uri()):
            return None
    except webbrowser.Error as err:
        return f"no web browser found ({err})"
    return "no web browser found (set $BROWSER)"
