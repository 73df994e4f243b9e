"""The `place` and `place-compare` run kinds: their tables, summaries and the place run's page,
registered with kinds.py."""

from __future__ import annotations

from jitterscope import kinds, runcheck
from jitterscope.kinds import Lazy, RunKind, TableSpec
from jitterscope.place import schema

kinds.register(
    RunKind(
        "place",
        tables={"observations": TableSpec(schema.OBSERVATIONS), "decisions": TableSpec(schema.DECISIONS)},
        summary=runcheck.PlaceSummary,
        doc="`jitterscope place`: every task's observation per quantum (weight and its source) and every "
        "placement decision with its reason",
        order=5,
        page=Lazy("jitterscope.place.report:build_page"),
    )
)

kinds.register(
    RunKind(
        "place-compare",
        tables={"results": TableSpec(schema.RESULTS)},
        summary=runcheck.PlaceCompareSummary,
        doc="`jitterscope place --compare`: per repetition, policy set and task, throughput (per wall and per "
        "CPU second) and noise; each run is a place run under runs/",
        order=6,
    )
)
