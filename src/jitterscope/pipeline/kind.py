"""The `pipeline` run kind (`pipeline run`): its tables, summary, page, comparison and recovery,
registered with kinds.py."""

from __future__ import annotations

from pathlib import Path

from jitterscope import kinds
from jitterscope.kinds import Comparison, Lazy, Recovery, RunKind, TableSpec, if_traced, never
from jitterscope.pipeline import schema
from jitterscope.runcheck import Count, Number, OpenModel


class PipelineLatency(OpenModel):
    n: Count = 0
    mean: Number | None = None
    sd: Number | None = None
    min: Number | None = None
    p50: Number | None = None
    p99: Number | None = None
    p999: Number | None = None
    max: Number | None = None


class PipelineSummary(OpenModel):
    """`jitterscope pipeline run` (docs/run-format.md, "pipeline runs")."""

    run: dict[str, object]
    latency: PipelineLatency
    subboxes: list[dict[str, object]] = []
    outputs: dict[str, object] = {}
    guard: dict[str, object] = {}
    late: dict[str, object] | None = None
    lost_events: Count = 0


def _finds(run_dir: Path) -> bool:
    """A pipeline run cut short: meta.json, written at the start, still marked incomplete (session.py)."""
    from jitterscope.session import started_as

    return started_as(run_dir, "pipeline")


kinds.register(
    RunKind(
        "pipeline",
        tables={
            "iterations": TableSpec(schema.ITERATIONS),
            "outputs": TableSpec(schema.OUTPUTS),
            "subboxes": TableSpec(schema.SUBBOXES, required=never),  # only with per-sub-box timers
            "attribution": TableSpec(schema.ATTRIBUTION, required=if_traced),
        },
        summary=PipelineSummary,
        doc="`jitterscope pipeline run`: per-iteration latencies, per-sub-box times, sink digests, late iterations",
        order=3,
        page=Lazy("jitterscope.pipeline.report:build_page"),
        comparison=Comparison(
            Lazy("jitterscope.pipeline.compare:compare_pipelines"), Lazy("jitterscope.pipeline.compare:render_compare")
        ),
        recovery=Recovery(_finds, Lazy("jitterscope.pipeline.actions:do_analyze")),
    )
)
