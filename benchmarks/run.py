"""Run every benchmarks/bench_*.py in turn (`make bench`)."""

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
    sys.exit(f"failed: {', '.join(failed)}")
