"""What every benchmark shares: where its figures go, and how a missed target fails `make bench`.

`make bench` never edits the tracked BENCHMARKS.md (figures there are written by
hand, with the machine they came from): each benchmark prints its section and
writes it to build/bench/<section>.md, to be copied in after a reading.  A
benchmark returns exit code 1 when one of its targets is missed, so `make bench`
(benchmarks/run.py) fails, naming it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "bench"


def section(heading: str, body: str) -> Path:
    """Print a BENCHMARKS.md section and keep it in build/bench/ (never in BENCHMARKS.md itself)."""
    text = f"{heading}\n\n{body.strip()}\n"
    print(text, flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", heading.lstrip("# ").lower()).strip("-")
    path = OUT / f"{slug}.md"
    path.write_text(text)
    print(f"(section written to {path.relative_to(ROOT)}; copy it into BENCHMARKS.md by hand)", flush=True)
    return path


class Targets:
    """Targets of one benchmark: `check(name, ok)` each, then `exit_code()` (1 if any was missed)."""

    def __init__(self) -> None:
        self.missed: list[str] = []

    def check(self, name: str, ok: bool) -> str:
        if not ok:
            self.missed.append(name)
        return "met" if ok else "NOT met"

    def exit_code(self) -> int:
        for name in self.missed:
            print(f"target missed: {name}", flush=True)
        return 1 if self.missed else 0
