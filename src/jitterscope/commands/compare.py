"""Compare two runs: new, gone and changed noise sources, and total noise per CPU.

Sources are matched by kind and name (kworker ids, which change between boots,
match as kworker/N:*).  A source's rate is compared with the exact conditional
test for two Poisson rates, its per-occurrence time with the Mann-Whitney test
(effect size: Cliff's delta), each CPU's total noise with Mann-Whitney on
equal time blocks; p-values are adjusted with Benjamini-Hochberg.  Only the CPUs
both runs measured are compared; the rest is listed as not compared.  Runs
measured differently are put on a common basis (detours above the higher
--threshold in both) or not tested (a traced against an untraced run, a
real-time probe against a normal one): never a regression from a setting.
BASE and NEW must be of one kind; two cluster runs are compared node by node.

With --fail-on-regression the exit code is 1 when the total noise of a CPU or
any source got worse with q < ALPHA (0.01), by at least MIN_PPM (20 ppm, i.e.
20 us per second per CPU) and to at least MIN_RATIO (1.5) times the base.

EXAMPLES
  jitterscope compare runs/before-upgrade runs/after-upgrade
  jitterscope compare BASE NEW --json | jq '.new[] | .name'
  jitterscope compare BASE NEW --fail-on-regression || mail -s "new OS noise" ops < /dev/null
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jitterscope import options


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", type=Path, metavar="BASE", help="the reference run directory")
    p.add_argument("new", type=Path, metavar="NEW", help="the run to check against it")
    options.add_json(p, "the comparison as JSON")
    p.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when total noise or a source got significantly worse (see above)",
    )
    options.add_regression_thresholds(p)


def run(args: argparse.Namespace) -> int:
    thresholds = options.regression_thresholds(args)
    # scipy only once the thresholds are known good: a typo is refused in a fraction of a second
    from jitterscope.compare import Thresholds
    from jitterscope.compare.runs import compare_runs, render_text

    res = compare_runs(args.base, args.new, Thresholds(*thresholds))
    if args.json:
        options.print_json(res)
    else:
        print(render_text(res))
    return 1 if args.fail_on_regression and res.get("regression") else 0
