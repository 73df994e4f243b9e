"""How many noisy values a fit needs, and what a fit with fewer says: fitting.py refuses with it, and
`sync` says it without starting scipy (1-1.4 s to import here) for a program with too few waits."""

from __future__ import annotations

MIN_POSITIVE = 20


def too_few(positive: int, total: int, what: str) -> str | None:
    """Why `positive` noisy values of `total` `what` (e.g. "phases of 5 ms") cannot be fitted; None if they can."""
    if positive >= MIN_POSITIVE:
        return None
    if total < MIN_POSITIVE:  # too few of them at all, noisy or not
        return f"only {total} {what}; fitting needs at least {MIN_POSITIVE}"
    return f"only {positive} of {total} {what} met any noise; fitting needs at least {MIN_POSITIVE}"
