"""compare, report and export through the CLI on made-up runs: exit codes, the JSON's shape, and runs that
are empty, newer, truncated or missing (one line, exit 2).  Nothing here measures, so the file runs beside
the others (conftest FREE); test_compare_runs.py has the real runs."""

from __future__ import annotations

import json

import pytest

from tests.fixtures_runs import Injector, build_run
from tests.support import cli_batch

from .conftest import jitterscope


def test_cli_exit_codes_and_json_shape_on_synthetic_runs(tmp_path):
    a = build_run(tmp_path / "a", cpus=[1, 2], seed=41)
    b = build_run(tmp_path / "b", cpus=[2, 3], seed=42, injector=Injector(cpu=2))
    p = jitterscope("compare", str(a), str(b), "--json", "--fail-on-regression")
    assert p.returncode == 1 and p.stderr == ""
    res = json.loads(p.stdout)
    assert set(res) >= {"new", "gone", "changed", "total", "not_compared", "regression"}
    assert all({"kind", "name"} <= set(x) for x in res["new"] + res["gone"] + res["changed"])
    assert set(res["total"]) == {"2"} and res["not_compared"] == ["CPU 1: only in BASE", "CPU 3: only in NEW"]
    text = jitterscope("compare", str(a), str(b))
    assert text.returncode == 0 and "not compared: CPU 1: only in BASE" in text.stdout
    assert "REGRESSION" in text.stdout


@pytest.fixture(scope="module")
def bad_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    good = build_run(tmp / "good", seed=43, duration_s=0.5)
    (tmp / "empty").mkdir()
    newer = build_run(tmp / "newer", seed=44, duration_s=0.5)
    meta = json.loads((newer / "meta.json").read_text())
    meta["format_version"] = 99
    (newer / "meta.json").write_text(json.dumps(meta))
    trunc = build_run(tmp / "trunc", seed=45, duration_s=0.5)
    data = (trunc / "attribution.parquet").read_bytes()
    (trunc / "attribution.parquet").write_bytes(data[: len(data) // 2])
    return (
        tmp,
        good,
        {
            "empty": "not a jitterscope run",
            "newer": "newer than this jitterscope",
            "trunc": "Parquet",
            "missing": "no such run directory",
        },
    )


def test_bad_runs_give_one_line_and_exit_2(bad_runs):
    """Every command on every bad run, through cli.main in one process (tests/support/cli_batch.py: what a
    user sees is the exit code and the line, not the start-up, and compare's imports take seconds)."""
    tmp, good, needles = bad_runs
    cases = []
    for name in needles:
        bad = tmp / name
        cases += [
            (f"compare {name}", ["compare", str(good), str(bad)]),
            (f"report {name}", ["report", str(bad)]),
            (f"export {name}", ["export", str(bad), "--format", "csv", "-o", str(tmp / "x.csv")]),
        ]
    got = cli_batch.batch(cases, tmp)
    assert set(got) == {c for c, _ in cases}
    for case, (code, err) in got.items():
        needle = needles[case.split()[1]]
        assert code == 2, (case, err)
        assert len(err.strip().splitlines()) == 1 and needle in err, (case, err)
        assert "Traceback" not in err, case
    assert not (tmp / "x.csv").exists()
