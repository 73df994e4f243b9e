"""The `pipeline` run kind (`pipeline run`): its tables, summary, page, comparison and recovery,
registered with kinds.py."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from jitterscope import kinds, runcheck
from jitterscope.kinds import Comparison, Recovery, RunKind, TableSpec, if_traced, never
from jitterscope.pipeline import schema
from jitterscope.rundir import Run


def _page(run: Run) -> tuple[str, list[Any]]:
    from jitterscope.pipeline.report import build_page

    return build_page(run)


def _compare(base: Run, new: Run, th: Any) -> dict[str, Any]:
    from jitterscope.pipeline.compare import compare_pipelines

    return compare_pipelines(base, new, th)


def _render_compare(res: dict[str, Any]) -> str:
    from jitterscope.pipeline.compare import render_compare

    return render_compare(res)


def _finds(run_dir: Path) -> bool:
    return (run_dir / "raw" / "meta.json").exists()  # a pipeline run cut short (pipeline/build.py)


def _analyze(args: argparse.Namespace) -> int:
    from jitterscope.pipeline.actions import do_analyze

    return do_analyze(args)


kinds.register(
    RunKind(
        "pipeline",
        tables={
            "iterations": TableSpec(schema.ITERATIONS),
            "outputs": TableSpec(schema.OUTPUTS),
            "subboxes": TableSpec(schema.SUBBOXES, required=never),  # only with per-sub-box timers
            "attribution": TableSpec(schema.ATTRIBUTION, required=if_traced),
        },
        summary=runcheck.PipelineSummary,
        doc="`jitterscope pipeline run`: per-iteration latencies, per-sub-box times, sink digests, late iterations",
        order=3,
        page=_page,
        comparison=Comparison(_compare, _render_compare),
        recovery=Recovery(_finds, _analyze),
    )
)
