"""A progress bar with ETA on stderr (only on a terminal, or when forced)."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, label: str, total: float, unit: str = "", enabled: bool | None = None) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.enabled = sys.stderr.isatty() if enabled is None else (enabled and sys.stderr.isatty())
        self.t0 = time.monotonic()
        self._last = 0.0

    def update(self, done: float, note: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and done < self.total:
            return
        self._last = now
        frac = min(max(done / self.total, 0.0), 1.0) if self.total else 1.0
        width = 30
        filled = int(frac * width)
        elapsed = now - self.t0
        eta = (elapsed / frac - elapsed) if frac > 0 else 0.0
        bar = "█" * filled + "░" * (width - filled)
        amount = f"{done:.1f}/{self.total:.1f}{self.unit}" if self.unit else f"{done:.0f}/{self.total:.0f}"
        sys.stderr.write(f"\r{self.label} {bar} {frac * 100:5.1f}% {amount} ETA {eta:5.1f}s {note}\x1b[K")
        sys.stderr.flush()

    def close(self, message: str = "") -> None:
        if not self.enabled:
            return
        sys.stderr.write("\r\x1b[K" + (message + "\n" if message else ""))
        sys.stderr.flush()
