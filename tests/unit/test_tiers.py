"""The suite's tiers stay what the README says: unit tests run in-process without root, and every integration
file says what it needs (tests/integration/conftest.py NEEDS) with markers pyproject declares."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import tomllib

from tests.integration.conftest import FREE, NEEDS, PRIVATE_ROOT

ROOT = Path(__file__).resolve().parents[2]


def test_every_integration_file_says_what_it_needs_with_declared_markers():
    files = {p.name for p in (ROOT / "tests" / "integration").glob("test_*.py")}
    assert files == set(NEEDS), f"unlisted: {sorted(files - set(NEEDS))}, gone: {sorted(set(NEEDS) - files)}"
    declared = {
        m.split(":")[0]
        for m in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    }
    used = {n for needs in NEEDS.values() for n in needs}
    assert used <= declared, used - declared
    # a spread test changes nothing (root only for a mount of its own)
    assert FREE <= set(NEEDS) and not any("root" in NEEDS[f] for f in FREE - PRIVATE_ROOT)
    assert PRIVATE_ROOT <= FREE


def test_unit_tests_start_no_process_of_the_tool():
    """The unit tier calls main() and the library; starting `python -m jitterscope` belongs to integration."""
    offenders = []
    for path in sorted((ROOT / "tests" / "unit").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value == "jitterscope" and _in_argv(node, tree):
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, offenders


def _in_argv(const: ast.Constant, tree: ast.AST) -> bool:
    """Whether the string sits in a list literal that also holds "-m" (an argv of `python -m jitterscope`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.List) and const in node.elts:
            return any(isinstance(e, ast.Constant) and e.value == "-m" for e in node.elts)
    return False


def test_the_machine_group_really_runs_on_one_worker(tmp_path):
    """make integration relies on xdist's loadgroup naming grouped tests `...@machine` (pytest 9 broke it):
    a stand-in for a machine file and a free one, run through the integration tier's own hook."""
    (tmp_path / "conftest.py").write_text("from tests.integration.conftest import pytest_collection_modifyitems\n")
    for name in ("test_restore_cli.py", "test_ptts_cli.py"):
        (tmp_path / name).write_text("def test_one():\n    pass\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider", "."],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED test_restore_cli.py::test_one@machine" in proc.stdout, proc.stdout
    assert "PASSED test_ptts_cli.py::test_one \n" in proc.stdout, proc.stdout


def test_a_spread_test_yields_to_the_machine_group():
    """Unit tests (spread beside the machine group) run at the lower priority tests/support/lanes.py sets."""
    import pytest

    from tests.support.lanes import SPREAD_NICE

    if os.geteuid() != 0:
        pytest.skip("without root a test could not return to its priority, so it keeps it")
    assert os.getpriority(os.PRIO_PROCESS, 0) >= SPREAD_NICE
