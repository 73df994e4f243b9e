"""`compare_loaded`: two loaded measure runs, restricted to the CPUs they share, sampled and diffed."""

from __future__ import annotations

from jitterscope.compare.comparable import as_json, basis
from jitterscope.compare.diff import diff, every_source
from jitterscope.compare.events import add_event_rates
from jitterscope.compare.results import Comparison, RunInfo
from jitterscope.compare.sample import from_run
from jitterscope.compare.thresholds import Thresholds
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import Run


def _run_info(run: Run) -> RunInfo:
    return {
        "id": run.meta.get("id"),
        "path": str(run.path),
        "host": run.meta.get("host"),
        "kernel": run.meta.get("kernel"),
        "cpus": run.cpus,
        "duration_s": run.meta.get("duration_s"),
        "tracing": run.tracing,
        "lost_events": int(run.meta.get("lost_events", 0) or 0),
    }


def compare_loaded(
    base: Run, new: Run, th: Thresholds | None = None, only: set[tuple[str, str]] | None = None
) -> Comparison:
    """Compare two loaded runs.  `only` restricts the sources (source_key keys) to a family of hypotheses
    named in advance (`tune verify`'s targets): the tests and their Benjamini-Hochberg family are then those."""
    cpus = sorted(set(base.cpus) & set(new.cpus))
    if not cpus:
        raise JitterscopeError(f"nothing to compare: BASE measured CPUs {base.cpus}, NEW measured {new.cpus}")
    not_compared = [f"CPU {c}: only in BASE" for c in sorted(set(base.cpus) - set(new.cpus))]
    not_compared += [f"CPU {c}: only in NEW" for c in sorted(set(new.cpus) - set(base.cpus))]
    on = basis(base, new)
    not_compared += on.not_comparable
    notes = list(on.notes)
    for w, r in (("BASE", base), ("NEW", new)):
        lost = int(r.meta.get("lost_events", 0) or 0)
        if lost:
            notes.append(f"{w} lost {lost} trace events: part of its noise is misattributed to unexplained")
    if base.meta.get("host") != new.meta.get("host"):
        notes.append(f"different hosts: {base.meta.get('host')} vs {new.meta.get('host')}")
    b, n = (from_run(r, cpus, on.threshold_ns, on.block_ns) for r in (base, new))
    if not on.sources:  # untraced on one side: its noise is all "unexplained"; no source is comparable
        b.occurrences, n.occurrences = {}, {}
    if only is not None:
        for s in (b, n):
            s.occurrences = {k: v for k, v in s.occurrences.items() if k in only}
    result = diff(b, n, th, frozenset(on.untested_kinds), on.test_totals)
    add_event_rates(base, new, cpus, every_source(result))
    return {
        "runs": {"base": _run_info(base), "new": _run_info(new)},
        "compared_cpus": cpus,
        "basis": as_json(on),
        "not_compared": not_compared,
        "notes": notes,
        **result,
    }
