"""What every benchmark shares: its targets, its "not run" exit, and its section of BENCHMARKS.md.

The convention (also stated at the top of BENCHMARKS.md), for every benchmarks/bench_NAME.py:

    bench = Bench("NAME", "## Heading")          # at the start: load average and time are taken here
    bench.require(os.geteuid() == 0, "needs root")  # else prints "not run: needs root", exits NOT_RUN
    ...measure...
    bench.check("probe / bare rdtsc <= 1.3", ratio <= 1.3, f"{ratio:.3f}")
    bench.section(body)                          # prints the section; with --write also puts it in BENCHMARKS.md
    return bench.exit_code()                     # MET (0), MISSED (3)

Every figure in BENCHMARKS.md sits between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` and is written
there by `bench_NAME.py --write` (or `make bench`), never by hand: the section gets a header line with the
date, machine, load average (at start and end: the machine may be shared) and command line, and a footer
listing each target as met or missed.  A benchmark that cannot run here (not root, no PMU, a missing tool)
exits NOT_RUN with "not run: why" and leaves its section as it was.  benchmarks/run.py (`make bench`) runs
them all and ends with a table: met / missed / not run / failed; it exits non-zero unless all were met.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
DOC = ROOT / "BENCHMARKS.md"
# Exit codes.  Not 1: that is Python's own for an uncaught exception, which run.py counts as "failed",
# as any other code.
MET, MISSED, NOT_RUN = 0, 3, 4


def _machine() -> str:
    from jitterscope import sysinfo

    virt = sysinfo.virtualization() or "bare metal"
    return f"{sysinfo.cpu_model()}, {os.cpu_count()} CPUs, Linux {platform.release()} ({virt})"


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"


def replace_section(doc: str, name: str, text: str) -> str:
    """`doc` with the text between bench:NAME's markers replaced (the markers appended at the end if new)."""
    start, end = markers(name)
    block = f"{start}\n{text.strip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(doc):
        return pattern.sub(lambda _: block, doc, count=1)
    return doc.rstrip("\n") + f"\n\n{block}\n"


class Bench:
    """One benchmark's run: its targets and its BENCHMARKS.md section (see the module docstring)."""

    def __init__(self, name: str, heading: str, argv: list[str] | None = None) -> None:
        args = sys.argv[1:] if argv is None else argv
        self.name, self.heading = name, heading
        self.write = "--write" in args
        # The settings a benchmark reads from the environment (BENCH_*, PIPELINE_BENCH_*) are part of its command.
        env = [f"{k}={shlex.quote(v)}" for k, v in sorted(os.environ.items()) if re.search(r"(^|_)BENCH_", k)]
        self.command = " ".join([*env, "python", f"benchmarks/bench_{name}.py", *map(shlex.quote, args)])
        self.started = datetime.now(timezone.utc)
        self.load_start = _load()
        self.t0 = time.monotonic()
        self.targets: list[tuple[str, bool, str]] = []
        self.lines: list[str] = []

    def log(self, line: str) -> None:
        """Print a line of results and keep it for `section()` without a body."""
        print(line, flush=True)
        self.lines.append(line)

    def require(self, ok: bool, why: str) -> None:
        if not ok:
            self.not_run(why)

    def not_run(self, why: str) -> NoReturn:
        print(f"not run: {why}", flush=True)
        sys.exit(NOT_RUN)

    def check(self, target: str, ok: bool, figure: str = "") -> str:
        """Record one target ("what <= bound"), its figure and whether it was met; returns "met"/"NOT met"."""
        self.targets.append((target, bool(ok), figure))
        return "met" if ok else "NOT met"

    def section(self, body: str | None = None) -> str:
        """The section (header, body, targets): printed, and written into BENCHMARKS.md with --write.
        Without a body, the lines given to `log()` make it (as a preformatted block)."""
        if body is None:
            body = "\n".join(["```", *self.lines, "```"])
        header = (
            f"_Written by `{self.command}` on {self.started:%Y-%m-%d %H:%M} UTC in "
            f"{time.monotonic() - self.t0:.0f} s. Machine: {_machine()}. "
            f"Load average (1/5/15 min) {self.load_start} at start, {_load()} at end._"
        )
        rows = [f"- {t}: **{'met' if ok else 'NOT met'}**" + (f" ({f})" if f else "") for t, ok, f in self.targets]
        text = f"{self.heading}\n\n{header}\n\n{body.strip()}\n\nTargets:\n\n" + "\n".join(rows) + "\n"
        print(text, flush=True)
        if self.write:
            DOC.write_text(replace_section(DOC.read_text(), self.name, text))
            print(f"(written to BENCHMARKS.md between {markers(self.name)[0]} markers)", flush=True)
        return text

    def exit_code(self) -> int:
        if not self.targets:
            print(f"bench_{self.name}.py checked no target", flush=True)
            return 2
        missed = [t for t, ok, _ in self.targets if not ok]
        for t in missed:
            print(f"target missed: {t}", flush=True)
        return MISSED if missed else MET
