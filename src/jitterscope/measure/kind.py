"""The `measure` run kind (also each run of monitor and doe): its tables, summary, page, comparison,
exports and recovery, registered with kinds.py."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field, StrictStr

from jitterscope import kinds, options
from jitterscope.humanize import count
from jitterscope.kinds import Comparison, Exported, Exporter, Lazy, Recovery, RunKind, TableSpec, if_traced
from jitterscope.runcheck import Count, Number, OpenModel
from jitterscope.rundir import ACTIVITY_SCHEMA, ATTRIBUTION_SCHEMA, DETOUR_SCHEMA, Run
from jitterscope.tracing.records import KINDS as TRACE_KINDS

# Kinds a summary source may have: the trace's kinds and the unexplained remainder.
SOURCE_KINDS = frozenset(TRACE_KINDS) | {"unexplained"}


def _source_kind(k: str) -> str:
    if k not in SOURCE_KINDS:
        raise ValueError(f"must be one of {', '.join(sorted(SOURCE_KINDS))}, got {k!r}")
    return k


class CpuSummary(OpenModel):
    noise_ns: Count = 0
    noise_ppm: Annotated[Number, Field(ge=0)] = 0.0
    detours: Count = 0
    p99_ns: Number = 0.0
    max_ns: Count = 0
    resolution_ns: Number = 0.0


class Source(OpenModel):
    kind: Annotated[StrictStr, AfterValidator(_source_kind)]
    name: StrictStr
    count: Count = 0
    total_ns: Count = 0
    share: Number = 0.0
    cpus: list[Count] = []
    # added: absent in runs written before events were counted (read as not counted)
    detours_per_s: Annotated[Number, Field(ge=0)] | None = None
    events: Count | None = None
    events_per_s: Annotated[Number, Field(ge=0)] | None = None


class QuietSource(OpenModel):
    kind: Annotated[StrictStr, AfterValidator(_source_kind)]
    name: StrictStr
    events: Count = 0
    events_per_s: Annotated[Number, Field(ge=0)] = 0.0
    cpus: list[Count] = []


class Unexplained(OpenModel):
    count: Count = 0
    total_ns: Count = 0
    share: Number = 0.0


class Chain(OpenModel):
    sources: list[StrictStr]
    count: Count
    total_ns: Count


class MeasureSummary(OpenModel):
    run: dict[str, Any]
    cpus: dict[str, CpuSummary]
    sources: list[Source]
    quiet_sources: list[QuietSource] = []
    chains: list[Chain] = []
    unexplained: Unexplained = Unexplained()
    lost_events: Count = 0


# Hooks import their modules when called: looking a kind up must not pull in the exporters.


def _perfetto(run: Run, out: Path, cpu: int | None) -> Exported:
    from jitterscope.export import write_perfetto

    return write_perfetto(run, out)


def _loggopsim(run: Run, out: Path, cpu: int | None) -> Exported:
    from jitterscope.export import write_loggopsim

    return write_loggopsim(run, out, cpu)


def _csv(run: Run, out: Path, cpu: int | None) -> Exported:
    from jitterscope.export import write_csv

    return write_csv(run, out)


def _describe_export(res: Exported) -> str:
    return f"{count(res['detours'], 'detour')} written as {res['format']}: {', '.join(res['files'])}"


# A cluster run has these tables per node (cluster/kind.py)
TABLES = {
    "detours": TableSpec(DETOUR_SCHEMA),
    "attribution": TableSpec(ATTRIBUTION_SCHEMA, required=if_traced),
    "activity": TableSpec(ACTIVITY_SCHEMA, required=if_traced),
}

# A cluster run exports through the same writers, node by node (cluster/kind.py uses these too).
DETOUR_EXPORTERS = {
    "perfetto": Exporter(_perfetto, _describe_export),
    "loggopsim": Exporter(_loggopsim, _describe_export),
    "csv": Exporter(_csv, _describe_export),
}


def _finds(run_dir: Path) -> bool:
    return True  # measure/recover.py says what is missing, or that there is nothing to analyse


def _analyze(args: argparse.Namespace) -> int:
    """`jitterscope analyze` of a measurement (or a cluster rank's run) cut short."""
    from jitterscope.measure.lifecycle import write_report_or_warn
    from jitterscope.measure.recover import analyze, is_complete
    from jitterscope.measure.render import render_summary
    from jitterscope.rundir import load_run

    missing = None if is_complete(args.run) else analyze(args.run, jobs=getattr(args, "jobs", None))
    if missing is None:  # complete already (or another jitterscope finished it meanwhile)
        run = load_run(args.run)
        if args.json:
            options.print_json(run.summary)
        else:
            print(f"{args.run}: already a complete run; nothing to analyse")
        return 0
    if not args.no_report:
        write_report_or_warn(args.run)
    run = load_run(args.run)
    if args.json:
        options.print_json(run.summary)
        return 0
    print(render_summary(run.summary, str(args.run), run.meta))
    if missing:
        print("\nRecovered from a cut-short run; not recovered:")
        for m in missing:
            print(f"  - {m}")
    else:
        print("\nRecovered from a cut-short run; nothing was lost.")
    if (args.run / "report.html").exists():
        print(f"Report: {args.run / 'report.html'}")
    return 0


kinds.register(
    RunKind(
        "measure",
        tables=TABLES,
        summary=MeasureSummary,
        doc="`jitterscope measure` (also each run of monitor and doe): one machine's detours and their sources",
        label="a single-machine run",
        order=0,
        page=Lazy("jitterscope.report.run:build_page"),
        comparison=Comparison(
            Lazy("jitterscope.compare:compare_loaded"), Lazy("jitterscope.compare.render:render_compare")
        ),
        exporters=DETOUR_EXPORTERS,
        recovery=Recovery(_finds, _analyze, last=True),
        summary_cpus=True,
    )
)
