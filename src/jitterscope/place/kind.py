"""The `place` and `place-compare` run kinds: their tables, summaries and the place run's page,
registered with kinds.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import StrictStr

from jitterscope import kinds
from jitterscope.kinds import Lazy, Recovery, RunKind, TableSpec
from jitterscope.place import schema
from jitterscope.runcheck import Count, Number, OpenModel


class PlaceSummary(OpenModel):
    """`jitterscope place` (docs/run-format.md, "place runs")."""

    run: dict[str, object]
    tasks: list[dict[str, object]]
    weight_sources: dict[str, Count] = {}
    coheavy_fraction: Number
    coheavy_method: StrictStr
    balanced_fraction: Number | None = None
    credit: dict[str, object] = {}
    decisions: dict[str, Count] = {}
    observer: dict[str, object] = {}


class PlaceCompareSummary(OpenModel):
    """`jitterscope place --compare` (docs/run-format.md, "place compare directories")."""

    baseline: StrictStr
    sets: list[StrictStr]
    repeat: Count
    ended_by: StrictStr
    runs: list[StrictStr]
    tasks: list[dict[str, object]]
    policies: dict[str, dict[str, object]]


def _finds(run_dir: Path) -> bool:
    from jitterscope.session import started_as

    return started_as(run_dir, "place")


def _analyze(args: argparse.Namespace) -> int:
    """A place run appends what it sees to `place.raw` as it runs (raw first, raw.py): killed at any moment
    after its tasks were started, the run is rebuilt from it the way a normal stop builds it (build.finish),
    interrupted, with what could not be recovered in `meta.recovered.missing`.  Killed before, one line
    (exit 2); meta.json still says what ran."""
    from jitterscope import options
    from jitterscope.errors import JitterscopeError
    from jitterscope.place import build, render
    from jitterscope.place.raw import RAW
    from jitterscope.place.results import read_summary
    from jitterscope.rundir import load_run
    from jitterscope.session import cut_short

    run_dir: Path = args.run
    if not (run_dir / RAW).exists():
        cut_short(run_dir, "a place run killed before it recorded anything (no place.raw): nothing to rebuild")
    try:
        raw = build.finish(run_dir, recovered=True)
    except JitterscopeError as err:
        cut_short(run_dir, str(err).removeprefix(f"{run_dir}: "))
    run = load_run(run_dir, kinds=("place",))
    if args.json:
        options.print_json(run.summary)
    else:
        print(render.render(read_summary(run), str(run_dir)))
        lost = build.missing(raw)
        print("recovered a killed place run; " + ("missing: " + "; ".join(lost) if lost else "nothing was lost"))
    return 0


kinds.register(
    RunKind(
        "place-compare",
        tables={"results": TableSpec(schema.RESULTS)},
        summary=PlaceCompareSummary,
        doc="`jitterscope place --compare`: per repetition, policy set and task, throughput (per wall and per "
        "CPU second) and noise; each run is a place run under runs/",
        order=6,
    )
)

kinds.register(
    RunKind(
        "place",
        tables={"observations": TableSpec(schema.OBSERVATIONS), "decisions": TableSpec(schema.DECISIONS)},
        summary=PlaceSummary,
        doc="`jitterscope place`: every task's observation per quantum (weight and its source) and every "
        "placement decision with its reason",
        order=5,
        page=Lazy("jitterscope.place.report:build_page"),
        recovery=Recovery(_finds, _analyze),
    )
)
