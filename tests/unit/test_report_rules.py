"""The report names sources by one rule (issue 17.6): the biggest *explained* source, and the
unexplained share apart, in the per-CPU table and in the headline alike."""

from __future__ import annotations

from pathlib import Path

from jitterscope.report.data import build_report_data
from jitterscope.rundir import load_run
from tests.fixtures_runs import build_run


def test_per_cpu_top_source_is_explained_and_unexplained_is_apart(tmp_path: Path) -> None:
    # hypervisor exits everywhere: on this CPU most of the noise is unexplained
    run = load_run(build_run(tmp_path / "r", seed=11, hypervisor_rate_hz=400.0))
    data = build_report_data(run)
    row = data["cpus"][0]
    assert row["top_source"]["kind"] != "unexplained"
    assert row["unexplained_share"] > row["top_source"]["share"]
    top = data["sources"][0]
    assert (row["top_source"]["kind"], row["top_source"]["name"]) == (top["kind"], top["name"])
    assert f"the biggest source is {top['kind']}:{top['name']}" in data["headline"]
    assert "is unexplained" in data["headline"] and "unexplained unexplained" not in data["headline"]
