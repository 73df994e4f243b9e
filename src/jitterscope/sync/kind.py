"""The `sync` run kind (`jitterscope sync -- CMD`): its tables, summary, page, comparison, Perfetto
export and recovery, registered with kinds.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from jitterscope import kinds, options
from jitterscope.humanize import count
from jitterscope.kinds import Comparison, Exported, Exporter, Lazy, Recovery, RunKind, TableSpec, if_traced
from jitterscope.runcheck import Count, Number, OpenModel
from jitterscope.rundir import Run
from jitterscope.sync import schema
from jitterscope.sync.summary import CriticalPath, Frames, RunHeader, TopObject


class SyncTypeSummary(OpenModel):
    count: Count = 0
    jitter_ns: Count = 0
    share: Number = 0.0


class SyncOverhead(OpenModel):
    """jitterscope's own share of a sync run's wall time (sync/overhead.py)."""

    startup_s: Number
    program_s: Number
    analysis_s: Number
    report_s: Number | None = None
    wall_s: Number
    own_s: Number
    own_share: Number | None = None
    ratio: Number | None = None


class SyncSummary(OpenModel):
    """`jitterscope sync` (docs/run-format.md, "sync runs")."""

    run: RunHeader
    run_ns: Count = 0
    sync_jitter_ns: Count = 0
    types: dict[str, SyncTypeSummary] = {}
    objects: list[TopObject] = []
    critical_path: CriticalPath | None = None
    frames: Frames | None = None
    dropped: Count = 0
    lost_events: Count = 0
    overhead: SyncOverhead | None = None  # absent when `jitterscope analyze` finished a cut-short run


def _perfetto(run: Run, out: Path, cpu: int | None) -> Exported:
    """Threads, waits and kernel causes on one Perfetto timeline (sync/perfetto.py)."""
    from jitterscope.sync.perfetto import write_sync_perfetto

    return write_sync_perfetto(run, out)


def _describe_export(res: Exported) -> str:
    return (
        f"{count(res['waits'], 'wait')} and {count(res['jitter'], 'jitter interval')} written as perfetto: "
        f"{', '.join(res['files'])}"
    )


def _finds(run_dir: Path) -> bool:
    # a sync run whose jitterscope was killed (sync/runner.py): from start-up (meta.json marked incomplete)
    # to the last table written (summary.json, the last file, missing)
    from jitterscope.session import started_as

    raw_kept = (run_dir / "sync-raw" / "meta.json").exists() and not (run_dir / "summary.json").exists()
    return raw_kept or started_as(run_dir, "sync")


def _analyze(args: argparse.Namespace) -> int:
    from jitterscope.rundir import load_run
    from jitterscope.sync.render import render
    from jitterscope.sync.runner import analyze_cut_short
    from jitterscope.sync.summary import read

    missing = analyze_cut_short(args.run, report=not args.no_report)
    run = load_run(args.run, kinds=("sync",))
    if args.json:
        options.print_json(run.summary)
        return 0
    print(render(read(run), str(args.run)))
    print("\nRecovered from a cut-short sync run; not recovered:\n" + "\n".join(f"  - {m}" for m in missing))
    return 0


kinds.register(
    RunKind(
        "sync",
        tables={
            "threads": TableSpec(schema.THREADS),
            "waits": TableSpec(schema.WAITS),
            "jitter": TableSpec(schema.JITTER),
            "events": TableSpec(schema.EVENTS),
            "segments": TableSpec(schema.SEGMENTS),
            "critical_path": TableSpec(schema.CRITICAL_PATH),
            "frames": TableSpec(schema.FRAMES),
            "objects": TableSpec(schema.OBJECTS),
            "causes": TableSpec(schema.CAUSES, required=if_traced),
            "subframes": TableSpec(schema.SUBFRAMES),
        },
        summary=SyncSummary,
        doc="`jitterscope sync -- CMD`: a pthread program's waits, synchronisation jitter, causes, critical path",
        label="a sync run",
        order=2,
        page=Lazy("jitterscope.sync.report:build_page"),
        comparison=Comparison(
            Lazy("jitterscope.sync.compare:compare_syncs"), Lazy("jitterscope.sync.render:render_compare")
        ),
        exporters={"perfetto": Exporter(_perfetto, _describe_export)},
        export_hint="its tables are Parquet already: {run}/jitter.parquet, waits.parquet",
        recovery=Recovery(_finds, _analyze),
    )
)
