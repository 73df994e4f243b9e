"""A full disk is one line naming the file, and leaves nothing half-written (issue 25, items 7-8).

A real full filesystem: a 1 MiB tmpfs, filled, mounted by the test (root) and unmounted after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jitterscope.cli import main
from tests.fixtures_runs import build_run

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs"),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_run(tmp_path_factory.mktemp("runs") / "run", seed=3, duration_s=1.0)


@pytest.fixture
def full(tmp_path: Path):
    d = tmp_path / "full"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)], check=True)
    try:
        yield d
    finally:
        subprocess.run(["umount", str(d)], check=True)


def _fill(d: Path, leave: int) -> None:
    st = os.statvfs(d)
    (d / "fill").write_bytes(b"\0" * max(st.f_bavail * st.f_frsize - leave, 0))


@pytest.mark.parametrize("leave", [0, 24 * 1024])  # nothing left; room for a figure or two, not the page
def test_a_report_to_a_full_disk_leaves_no_figure_beside_a_missing_page(run, full, leave, capsys) -> None:
    _fill(full, leave)
    code = main(["report", str(run), "--out", str(full / "report.html")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "disk full" in err and str(full) in err, err
    assert sorted(p.name for p in full.iterdir()) == ["fill"]


def test_stdout_to_a_full_disk_is_named(run, full) -> None:
    _fill(full, 0)
    with open(full / "out.json", "w") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "jitterscope", "compare", str(run), str(run), "--json"],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            timeout=120,
        )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "jitterscope: error: standard output: disk full (no space left on device)\n"


@pytest.mark.parametrize(
    "argv,leave",
    [  # room for the first figure (~15 KB; fit's ~24 KB), not the next (~20 KB; ~194 KB): SVG text kept as text
        (["simulate", "--noise", "RUN", "--nodes", "1,4", "--phases", "10", "--phase", "1ms", "--plots", "FULL"], 24),
        (["fit", "RUN", "--phase", "1ms", "--replicates", "19", "--plots", "FULL"], 120),
    ],
    ids=["simulate", "fit"],
)
def test_plots_to_a_full_disk_leave_no_half_set(run, full, argv, leave, capsys) -> None:
    _fill(full, leave * 1024)
    code = main([{"RUN": str(run), "FULL": str(full)}.get(a, a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "disk full" in err, err
    assert sorted(p.name for p in full.iterdir()) == ["fill"]
