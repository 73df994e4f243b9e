"""`make bench` reports every benchmark as met / missed / not run / failed and fails unless all were met;
each benchmark writes its own BENCHMARKS.md section, between its markers, only when run with --write."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))
from benchlib import markers, replace_section  # noqa: E402

MET = "from benchlib import Bench\nb = Bench('ok', '## OK')\nb.check('fast', True, '1 s')\nb.section('ran')\n"
MISSED = "from benchlib import Bench\nb = Bench('slow', '## Slow')\nb.check('under 2 s', 3.1 < 2)\nb.section('ran')\n"
NOT_RUN = "from benchlib import Bench\nb = Bench('pmu', '## PMU')\nb.require(False, 'no PMU here')\nb.section('x')\n"
NO_TARGET = "from benchlib import Bench\nb = Bench('lazy', '## Lazy')\nb.section('ran')\n"
TAIL = "import sys\nsys.exit(b.exit_code())\n"


def _tree(tmp: Path, benches: dict[str, str]) -> Path:
    """A copy of run.py and benchlib.py with the given benchmarks, its BENCHMARKS.md beside it."""
    d = tmp / "benchmarks"
    d.mkdir()
    for f in ("run.py", "benchlib.py"):
        shutil.copy(BENCH / f, d / f)
    for name, code in benches.items():
        (d / f"bench_{name}.py").write_text(code + TAIL)
    (tmp / "BENCHMARKS.md").write_text("# Benchmarks\n\n<!-- bench:pmu -->\nold PMU figures\n<!-- /bench:pmu -->\n")
    return d


def _run(d: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(d / "run.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=d.parent,
        env={**os.environ, **(env or {})},
    )


def test_the_table_says_met_missed_not_run_and_failed(tmp_path: Path) -> None:
    d = _tree(tmp_path, {"ok": MET, "slow": MISSED, "pmu": NOT_RUN, "lazy": NO_TARGET})
    proc = _run(d)
    table = {m.group(1): m.group(2) for m in re.finditer(r"^\| (\w+) \| ([\w ]+) \|", proc.stdout, re.M)}
    assert table == {"benchmark": "result", "ok": "met", "slow": "missed", "pmu": "not run", "lazy": "failed"}
    assert re.search(r"^\| slow \| missed \| \d+ s \| under 2 s \|", proc.stdout, re.M)
    assert re.search(r"^\| pmu \| not run \| \d+ s \| no PMU here \|", proc.stdout, re.M)
    assert proc.returncode == 1


def test_only_all_met_passes(tmp_path: Path) -> None:
    d = _tree(tmp_path, {"ok": MET})
    assert _run(d).returncode == 0
    (d / "bench_pmu.py").write_text(NOT_RUN + TAIL)
    assert _run(d).returncode == 1  # a benchmark that could not run is no pass
    assert _run(d, "ok").returncode == 0  # selecting the ones to run


def test_write_puts_each_section_between_its_markers_and_not_run_keeps_the_old(tmp_path: Path) -> None:
    d = _tree(tmp_path, {"ok": MET, "pmu": NOT_RUN})
    doc = tmp_path / "BENCHMARKS.md"
    _run(d)
    assert "bench:ok" not in doc.read_text()  # without --write nothing is written
    _run(d, "--write", env={"BENCH_REPEATS": "2", "BENCH": "ok"})  # make bench BENCH=ok: a selection, no setting
    text = doc.read_text()
    start, end = markers("ok")
    section = text[text.index(start) : text.index(end)]
    assert "## OK" in section and "ran" in section and "- fast: **met** (1 s)" in section
    assert re.search(r"_Written by `BENCH_REPEATS=2 python benchmarks/bench_ok.py --write` on \d{4}-\d\d-\d\d", section)
    assert "Load average (1/5/15 min)" in section and "Machine: " in section
    assert "old PMU figures" in text  # not run: its section is left as it was


def test_replace_section_touches_only_its_own_markers() -> None:
    doc = "top\n<!-- bench:a -->\nA1\n<!-- /bench:a -->\nmiddle\n<!-- bench:b -->\nB1\n<!-- /bench:b -->\n"
    new = replace_section(doc, "a", "A2 with \\1 and $ signs")
    assert new == doc.replace("A1", "A2 with \\1 and $ signs")
    assert replace_section(new, "c", "C").endswith("<!-- bench:c -->\nC\n<!-- /bench:c -->\n")


def test_every_benchmark_checks_targets_and_can_say_not_run() -> None:
    for f in sorted(BENCH.glob("bench_*.py")):
        code = f.read_text()
        name = f.stem[len("bench_") :]
        assert re.search(rf"""Bench\(\s*["']{name}["']""", code), f"{f.name}: no Bench('{name}', ...)"
        assert ".check(" in code and ".exit_code()" in code and ".section(" in code, f"{f.name} checks no target"
        assert not re.search(r"return 0$", code, re.M), f"{f.name} returns 0 instead of its targets' exit code"
