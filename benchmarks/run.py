"""Run every benchmarks/bench_*.py in turn (`make bench`); exit 1 if any failed or missed a target.

BENCHMARKS.md is never edited here: each benchmark prints its figures (and keeps
its section in build/bench/); copy them into BENCHMARKS.md by hand, with the machine.
"""

import subprocess
import sys
from pathlib import Path

here = Path(__file__).parent
failed = []
for bench in sorted(here.glob("bench_*.py")):
    print(f"== {bench.name}", flush=True)
    if subprocess.call([sys.executable, str(bench)]) != 0:
        failed.append(bench.name)
if failed:
    sys.exit(f"make bench: {', '.join(failed)} failed or missed a target (see above)")
print("make bench: every target met; sections in build/bench/ (BENCHMARKS.md is edited by hand)")
