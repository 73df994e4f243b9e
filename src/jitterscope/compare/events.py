"""Each source's own event rate in both runs, beside compare's detour rate.

compare tests the rate of detours a source took part in (what the noise is made
of); its own rate (every interrupt, softirq or switch-in the trace saw, from
summary.json, measure/events.py) says whether the source itself ran more often.
The two can move apart: ticks x1.08 while the detours holding one x0.66.  Shown
only where both runs counted events and measured exactly the compared CPUs
(the summary's counts are per run, not per CPU).
"""

from __future__ import annotations

from jitterscope.compare.results import SourceRow
from jitterscope.compare.sample import Key, source_key
from jitterscope.rundir import Run


def event_counts(run: Run) -> dict[Key, int] | None:
    """Events per compare key, or None when the run did not count them."""
    rows = list(run.summary.get("sources") or []) + list(run.summary.get("quiet_sources") or [])
    if not rows or any(r.get("events") is None for r in rows):
        return None
    out: dict[Key, int] = {}
    for r in rows:
        key = source_key(r["kind"], r["name"])
        out[key] = out.get(key, 0) + int(r["events"])
    return out


def add_event_rates(base: Run, new: Run, cpus: list[int], rows: list[SourceRow]) -> None:
    """Give each compare row `events`: {base_per_s, new_per_s, ratio} (None where not comparable)."""
    counts = [event_counts(r) if sorted(r.cpus) == cpus else None for r in (base, new)]
    for row in rows:
        row["events"] = None
    if counts[0] is None or counts[1] is None:
        return
    exposure = [float(r.meta.get("duration_s") or 0.0) * len(cpus) for r in (base, new)]
    if min(exposure) <= 0:
        return
    for row in rows:
        key = (row["kind"], row["name"])
        b, n = counts[0].get(key, 0) / exposure[0], counts[1].get(key, 0) / exposure[1]
        row["events"] = {"base_per_s": round(b, 3), "new_per_s": round(n, 3), "ratio": round(n / b, 4) if b else None}
