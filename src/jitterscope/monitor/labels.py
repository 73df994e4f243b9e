"""Bounded label values for the per-source metrics.

Every distinct `name` label value is a series Prometheus keeps in memory for
hours, so a monitor that runs for months must not export an open set.  Two
folds keep it bounded:

* identity: a source is its command (comm), never a process.  Kernel worker ids
  fold as in `compare` (`kworker/1:2` -> `kworker/1:*`), and a command that
  carries a process id at its end (`worker-48213`, `rank48213`: four or more
  trailing digits) folds to `worker-*`.  Per-CPU kernel threads (`ksoftirqd/12`,
  `irq/24-virtio0`) keep their numbers: they name a CPU or an IRQ, a fixed set.
* a cap: at most `cap` source names hold a label at once.  A name keeps its
  label while it recurs; one unseen for `idle_windows` windows gives its place to
  a newcomer.  Beyond that a source folds into `name="(other)"` of its kind, and
  `jitterscope_sources_folded_total{kind}` counts each fold (one per source and
  window), so an operator sees when the cap bites and can raise `--max-sources`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from jitterscope.compare.sample import Key, source_key

OTHER = "(other)"
KINDS = ("irq", "softirq", "thread", "nmi")  # the kinds that can fold (unexplained is always one label)
_PID_SUFFIX = re.compile(r"^(.*[^\d/])\d{4,}$")


def identity(kind: str, name: str) -> Key:
    """The label a source is known by: compare's key, with a trailing process id folded."""
    kind, name = source_key(kind, name)
    if kind == "thread":
        m = _PID_SUFFIX.match(name)
        if m:
            name = m.group(1) + "*"
    return kind, name


class LabelCap:
    """Which source names hold a label; the rest fold into `(other)` and are counted."""

    def __init__(self, cap: int = 50, idle_windows: int = 180) -> None:
        if cap < 1 or idle_windows < 1:
            raise ValueError("cap and idle_windows must be positive")
        self.cap = cap
        self.idle_windows = idle_windows
        self.window = 0
        self.last_seen: dict[Key, int] = {}  # labelled names -> window they last appeared in
        self.folded_total = dict.fromkeys(KINDS, 0)

    def assign(self, ranked: Iterable[Key]) -> dict[Key, Key]:
        """Labels for one window's sources, given largest first (the largest win a free place)."""
        self.window += 1
        out: dict[Key, Key] = {}
        for key in ranked:
            if key in out:
                continue
            if key[0] not in KINDS or self._admit(key):
                out[key] = key
                continue
            out[key] = (key[0], OTHER)
            self.folded_total[key[0]] += 1
        return out

    def label(self, key: Key) -> Key:
        """The label a source has now (for sources named outside a window, e.g. regressions)."""
        return key if key[0] not in KINDS or key in self.last_seen else (key[0], OTHER)

    def _admit(self, key: Key) -> bool:
        if key not in self.last_seen and len(self.last_seen) >= self.cap:
            stale = min(self.last_seen, key=self.last_seen.__getitem__)
            if self.window - self.last_seen[stale] <= self.idle_windows:
                return False
            del self.last_seen[stale]
        self.last_seen[key] = self.window
        return True
