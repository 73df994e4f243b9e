"""The `protect` run kind: its tables and summary, registered with kinds.py (it has no page,
comparison, export or recovery of its own yet)."""

from __future__ import annotations

from pydantic import StrictStr

from jitterscope import kinds
from jitterscope.kinds import RunKind, TableSpec
from jitterscope.protect import schema
from jitterscope.runcheck import Number, OpenModel


class ProtectSummary(OpenModel):
    """`jitterscope protect` (docs/run-format.md, "protect runs")."""

    run: dict[str, object]
    signal: StrictStr
    actuator: StrictStr
    law: StrictStr
    sample_ns: Number
    suspend_ns: Number
    sampling: StrictStr = "timer"
    event_budget: dict[str, object] | None = None
    phases: dict[str, dict[str, object]]
    progress_ratio: Number | None = None
    delivery: dict[str, object] | None = None
    critical: dict[str, object] | None = None
    critical_latency: StrictStr | None = None
    cpus: dict[str, dict[str, object]] = {}
    controller: dict[str, object] = {}


kinds.register(
    RunKind(
        "protect",
        tables={
            "samples": TableSpec(schema.SAMPLES),
            "suspensions": TableSpec(schema.SUSPENSIONS),
            "iterations": TableSpec(schema.ITERATIONS),
        },
        summary=ProtectSummary,
        doc="`jitterscope protect`: every sample, decision and suspension of the duty-cycling controller, "
        "and the critical program's iterations",
        order=4,
    )
)
