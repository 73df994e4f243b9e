"""Progress of long work on stderr, with an ETA.

On a terminal: a bar redrawn in place.  Anywhere else (a CI log, a pipe, a
file): a plain line every `PLAIN_EVERY_S` seconds, e.g.

    simulate: 42% (420/1,000), about 12 s left

so a log shows the work is alive without a screenful of carriage returns.
The ETA is the remaining work at the rate measured since the first progress
report (set-up before it does not count), and is shown only after
`ETA_AFTER_S` of measured rate, so the first estimate is not a wild
extrapolation of a few milliseconds.  A known end (a measurement of fixed
duration: `exact=True`) needs no estimate: time left is total - done.
"""

from __future__ import annotations

import sys
import time

from jitterscope.humanize import number, seconds

PLAIN_EVERY_S = 5.0
ETA_AFTER_S = 1.0


class Progress:
    """`enabled`: None = show it (bar on a terminal, plain lines otherwise); False = never."""

    def __init__(
        self, label: str, total: float, unit: str = "", enabled: bool | None = None, exact: bool = False
    ) -> None:
        self.label, self.total, self.unit, self.exact = label, total, unit, exact
        self.enabled = enabled is not False
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self._last = 0.0
        self._first: tuple[float, float] | None = None  # (time, fraction) of the first report
        self._drawn = False

    def fraction(self, done: float) -> float:
        return min(max(done / self.total, 0.0), 1.0) if self.total else 1.0

    def eta_s(self, done: float, now: float | None = None) -> float | None:
        """Seconds left, or None while the rate is not yet known."""
        now = time.monotonic() if now is None else now
        frac = self.fraction(done)
        if self.exact and self.unit == "s":
            return max(self.total - done, 0.0)
        if self._first is None:
            return None
        t1, f1 = self._first
        if now - t1 < ETA_AFTER_S or frac <= f1:
            return None
        return (now - t1) / (frac - f1) * (1.0 - frac)

    def update(self, done: float, note: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        frac = self.fraction(done)
        if self._first is None:
            self._first = (now, frac)
        every = 0.1 if self.tty else PLAIN_EVERY_S
        if now - self._last < every and done < self.total:
            return
        if not self.tty and not self._drawn and now - self.t0 < PLAIN_EVERY_S:
            return  # short work says nothing in a log
        self._last = now
        eta = self.eta_s(done, now)
        left = "done" if frac >= 1.0 else f"about {seconds(eta)} left" if eta is not None else "estimating time left"
        amount = (
            ""
            if self.total == 1.0 and not self.unit
            # a bare fraction says nothing more
            else (f" ({number(done)}/{number(self.total)}{' ' + self.unit if self.unit else ''})")
        )
        if self.tty:
            width = 30
            bar = "█" * int(frac * width) + "░" * (width - int(frac * width))
            sys.stderr.write(f"\r{self.label} {bar} {frac * 100:5.1f}%{amount}, {left} {note}\x1b[K")
        else:
            sys.stderr.write(f"{self.label}: {frac * 100:.0f}%{amount}, {left}{' ' + note if note else ''}\n")
        self._drawn = True
        sys.stderr.flush()

    def close(self, message: str = "") -> None:
        if not self.enabled:
            return
        if self.tty:
            sys.stderr.write("\r\x1b[K" + (message + "\n" if message else ""))
        elif message:
            sys.stderr.write(message + "\n")
        sys.stderr.flush()
