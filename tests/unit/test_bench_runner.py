"""`make bench` never rewrites the tracked BENCHMARKS.md and fails when a target is missed (issue 17.6)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def test_no_benchmark_writes_benchmarks_md() -> None:
    for f in BENCH.glob("*.py"):
        code = f.read_text()
        assert not re.search(r"""["'/]BENCHMARKS\.md["']""", code), f"{f.name} names BENCHMARKS.md as a path"


def test_a_missed_target_fails_the_run_and_names_it(tmp_path: Path) -> None:
    shutil.copy(BENCH / "run.py", tmp_path / "run.py")
    shutil.copy(BENCH / "benchlib.py", tmp_path / "benchlib.py")
    (tmp_path / "bench_ok.py").write_text("import sys\nprint('fine')\nsys.exit(0)\n")
    (tmp_path / "bench_slow.py").write_text(
        "import sys\nfrom benchlib import Targets\nt = Targets()\n"
        "print(t.check('under 2 s', 3.1 < 2))\nsys.exit(t.exit_code())\n"
    )
    proc = subprocess.run([sys.executable, str(tmp_path / "run.py")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "target missed: under 2 s" in proc.stdout and "bench_slow.py" in proc.stderr
    assert "bench_ok.py" not in proc.stderr
    (tmp_path / "bench_slow.py").unlink()
    ok = subprocess.run([sys.executable, str(tmp_path / "run.py")], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0
