"""The `protect` run kind: its tables, summary and recovery, registered with kinds.py (it has no page,
comparison or export of its own yet)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import StrictStr

from jitterscope import kinds, options
from jitterscope.kinds import Recovery, RunKind, TableSpec
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


def _finds(run_dir: Path) -> bool:
    """A protect run cut short: meta.json (written at the start, marked incomplete) and its raw records."""
    from jitterscope.session import started_as

    return started_as(run_dir, "protect")


def _analyze(args: argparse.Namespace) -> int:
    """Rebuild the run from raw/controller.bin and the meta.json the session wrote before the controller
    started; a kill before that leaves nothing measured (one line, exit 2)."""
    from jitterscope.protect import build, records, render
    from jitterscope.protect.outcome import RECORDS
    from jitterscope.rundir import drop_session_marks, load_run
    from jitterscope.session import INCOMPLETE, cut_short, read_meta

    run_dir: Path = args.run
    meta = read_meta(run_dir)
    raw = run_dir / RECORDS
    if not raw.exists() or meta.get(INCOMPLETE) == "starting":
        cut_short(run_dir, "killed before the controller started: nothing was measured")
    header, recs = records.read_records(raw)
    ends = [float(recs[k]["t_ns"].max()) for k in ("samples", "suspensions", "beats") if len(recs[k])]
    missing = ["the controller's end line (its per-CPU CPU time and spin time)"]
    if not header["complete"]:
        missing.append("records after the controller's last drain")
    drop_session_marks(meta)
    meta.update(
        interrupted=True,
        ended_by=meta.get("ended_by") or "killed",
        duration_s=meta.get("duration_s") or (max(ends) / 1e9 if ends else 0.0),
        recovered={"by": "jitterscope analyze", "missing": missing},
    )
    summary = build.build(run_dir, meta, raw)
    if args.json:
        options.print_json(summary)
    else:
        run = load_run(run_dir, kinds=("protect",))
        print(render.render(summary, run.meta, str(run_dir)))
        print(f"recovered a cut-short protect run; not recovered: {'; '.join(missing)}")
    return 0


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
        recovery=Recovery(_finds, _analyze),
    )
)
