"""The `place` and `place-compare` run kinds: their tables, summaries and the place run's page,
registered with kinds.py."""

from __future__ import annotations

from pydantic import StrictStr

from jitterscope import kinds
from jitterscope.kinds import Lazy, RunKind, TableSpec
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
    )
)
