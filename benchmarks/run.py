"""Run the benchmarks (`make bench`) and end with a table: each one met / missed / not run / failed.

    python benchmarks/run.py [--write] [NAME ...]     # NAME: bench_NAME.py; all of them when none is given

--write lets each benchmark put its section into BENCHMARKS.md (benchlib.Bench).  Exit code 0 only when
every benchmark run met all its targets; one that was not run (not root, no PMU, a missing tool) or that
failed counts against it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from benchlib import MET, MISSED, NOT_RUN

HERE = Path(__file__).parent


def run_one(bench: Path, write: bool) -> tuple[str, str, float]:
    """(result, detail, seconds); its output is passed through as it comes."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, str(bench), *(["--write"] if write else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    why, missed, tail = "", [], list[str]()
    assert proc.stdout
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        tail = [*tail[-4:], line.rstrip()]
        if line.startswith("not run: "):
            why = line[len("not run: ") :].strip()
        elif line.startswith("target missed: "):
            missed.append(line[len("target missed: ") :].strip())
    rc = proc.wait()
    took = time.monotonic() - t0
    if rc == MET:
        return "met", "", took
    if rc == MISSED:
        return "missed", "; ".join(missed), took
    if rc == NOT_RUN:
        return "not run", why, took
    return "failed", f"exit code {rc}: {tail[-1] if tail else ''}", took


def main(argv: list[str]) -> int:
    write = "--write" in argv
    names = [a for a in argv if not a.startswith("-")]
    benches = sorted(HERE.glob("bench_*.py"))
    if names:
        unknown = [n for n in names if not (HERE / f"bench_{n}.py").exists()]
        if unknown:
            print(f"run.py: no benchmarks/bench_{unknown[0]}.py", file=sys.stderr)
            return 2
        benches = [HERE / f"bench_{n}.py" for n in names]
    results = []
    for bench in benches:
        print(f"== {bench.name}", flush=True)
        results.append((bench.stem[len("bench_") :], *run_one(bench, write)))
    print("\n| benchmark | result | time | detail |\n|---|---|---|---|")
    for name, result, detail, took in results:
        print(f"| {name} | {result} | {took:.0f} s | {detail} |")
    counts = {r: sum(1 for _, x, _, _ in results if x == r) for r in ("met", "missed", "not run", "failed")}
    print("\n" + ", ".join(f"{n} {r}" for r, n in counts.items()))
    return 0 if counts["met"] == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
