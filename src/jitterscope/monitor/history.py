"""The monitor's rolling history on disk: one run directory per window, bounded.

Windows are named `w<seq>-<UTC time>` so that name order is age order; after
each window the oldest are deleted until both the count and the total size are
within bounds (the newest window is always kept).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from jitterscope import outpath
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import run_stamp

_NAME = re.compile(r"^w(\d{8})-")


class History:
    def __init__(self, root: Path, max_windows: int = 100, max_bytes: int = 512 * 1024**2) -> None:
        if max_windows < 1 or max_bytes < 1:
            raise JitterscopeError("history bounds must be positive")
        self.root = Path(root)
        self.max_windows = max_windows
        self.max_bytes = max_bytes
        outpath.make_dir(self.root, "--history")  # no parents made for the user
        self.seq = max((int(m.group(1)) for p in self.windows() if (m := _NAME.match(p.name))), default=0)
        self.prune()

    def windows(self) -> list[Path]:
        """Window directories, oldest first."""
        return sorted(p for p in self.root.iterdir() if p.is_dir() and _NAME.match(p.name))

    def next_dir(self) -> Path:
        """Path for the next window (not created: `measure` creates it)."""
        self.seq += 1
        return self.root / f"w{self.seq:08d}-{run_stamp()}"

    @staticmethod
    def size(path: Path) -> int:
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())

    def discard(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def prune(self) -> list[Path]:
        """Delete the oldest windows beyond the bounds; return what was deleted."""
        wins = self.windows()
        sizes = [self.size(p) for p in wins]
        removed = []
        while len(wins) > 1 and (len(wins) > self.max_windows or sum(sizes) > self.max_bytes):
            self.discard(wins[0])
            removed.append(wins.pop(0))
            sizes.pop(0)
        return removed
