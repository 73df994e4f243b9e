"""The `protect` run kind: its tables and summary, registered with kinds.py (it has no page,
comparison, export or recovery of its own yet)."""

from __future__ import annotations

from jitterscope import kinds, runcheck
from jitterscope.kinds import RunKind, TableSpec
from jitterscope.protect import schema

kinds.register(
    RunKind(
        "protect",
        tables={
            "samples": TableSpec(schema.SAMPLES),
            "suspensions": TableSpec(schema.SUSPENSIONS),
            "iterations": TableSpec(schema.ITERATIONS),
        },
        summary=runcheck.ProtectSummary,
        doc="`jitterscope protect`: every sample, decision and suspension of the duty-cycling controller, "
        "and the critical program's iterations",
        order=4,
    )
)
