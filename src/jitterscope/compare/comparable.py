"""What two runs can be compared on, and what they cannot.

A difference in how two runs were measured is not a change in the machine, so
`compare` must never report it as a regression:

* **threshold** — a run with a higher threshold did not record the shorter
  detours.  Both runs are compared above the higher of the two: the detours
  (and their attribution) below it are left out of both.
* **tracing** — kernel tracing adds its own time to every detour it records
  (the event writes), and only a traced run has sources.  A traced run against
  an untraced one compares no sources and tests no totals: the totals are
  shown, not tested.
* **priority** — normal threads preempt a probe at a real-time priority only
  through RT throttling or the kernel's fair server (Linux 6.12+: 50 ms of each
  second for the normal tasks queued there), so thread sources appear or vanish
  with the setting: thread sources are not tested, nor are the totals.
* **duration** — rates are per second of measured time, so runs of different
  lengths compare; the per-CPU total test uses blocks of one length in both
  runs (block noise spreads differently in blocks of different lengths).  A
  factor above `DURATION_FACTOR` is named: a source rarer than once per the
  shorter run cannot show up in it.
* **CPUs** — only the CPUs both runs measured are compared (compare/__init__.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jitterscope.compare.results import BasisJson
from jitterscope.humanize import duration_ns as fmt_ns
from jitterscope.humanize import seconds as fmt_s
from jitterscope.rundir import Run

DURATION_FACTOR = 4.0
BLOCK_NS = 100_000_000  # 100 ms blocks for the per-CPU total test...
MAX_BLOCKS = 50  # ...but no more than this many in the shorter run...
MIN_BLOCKS = 3  # ...nor fewer.


@dataclass
class Basis:
    """The common basis of a comparison."""

    threshold_ns: float = 0.0  # detours shorter than this are left out of both runs
    block_ns: float = BLOCK_NS  # block length of the per-CPU total test, in both runs
    sources: bool = True  # sources (attribution) compared at all
    untested_kinds: set[str] = field(default_factory=set)  # source kinds shown but never a regression
    test_totals: bool = True  # per-CPU totals tested (else shown only)
    not_comparable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def threshold_ns(run: Run) -> float:
    return float((run.meta.get("options") or {}).get("threshold_ns") or 0.0)


def priority(run: Run) -> str | None:
    p = (run.meta.get("options") or {}).get("priority")
    return None if p in (None, "", "normal") else str(p)


def basis(base: Run, new: Run) -> Basis:
    """What BASE and NEW are compared on (see the module docstring)."""
    b = Basis()
    tb, tn = threshold_ns(base), threshold_ns(new)
    b.threshold_ns = max(tb, tn)
    if tb != tn:
        b.notes.append(
            f"thresholds differ (BASE {fmt_ns(tb)}, NEW {fmt_ns(tn)}): both compared above "
            f"{fmt_ns(b.threshold_ns)}, shorter detours left out of both"
        )
    if base.tracing != new.tracing:
        which = "BASE" if base.tracing else "NEW"
        b.sources, b.test_totals = False, False
        b.not_comparable.append(
            f"tracing: only {which} was traced; tracing adds its own time to every detour "
            f"and only a traced run has sources: no sources compared, totals shown, not tested"
        )
    elif not base.tracing:
        b.not_comparable.append("sources: attribution is off in both runs; only total noise compared")
    pb, pn = priority(base), priority(new)
    if pb != pn:
        b.untested_kinds.add("thread")
        b.test_totals = False
        b.not_comparable.append(
            f"priority: BASE {pb or 'normal'}, NEW {pn or 'normal'}; a real-time probe is not "
            f"preempted by threads: thread sources and totals shown, not tested"
        )
    db, dn = float(base.duration_ns), float(new.duration_ns)
    short = min(db, dn)
    nb = int(min(MAX_BLOCKS, max(MIN_BLOCKS, short // BLOCK_NS)))
    b.block_ns = short / nb if short > 0 else BLOCK_NS
    if short > 0 and max(db, dn) / short > DURATION_FACTOR:
        b.notes.append(
            f"durations differ {max(db, dn) / short:.0f}x ({fmt_s(db / 1e9)} vs {fmt_s(dn / 1e9)}): "
            f"rates compared per second; a source rarer than once per {fmt_s(short / 1e9)} "
            f"cannot show in the shorter run"
        )
    return b


def as_json(b: Basis) -> BasisJson:
    return {
        "threshold_ns": b.threshold_ns,
        "block_ns": b.block_ns,
        "sources": b.sources,
        "untested_kinds": sorted(b.untested_kinds),
        "totals_tested": b.test_totals,
    }
