"""The report's plain data: histograms, timeline, sources, chains, unexplained add up."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jitterscope.report.data import _spread, build_report_data
from jitterscope.report.pages import write_report
from jitterscope.rundir import load_run
from tests.fixtures_runs import Injector, build_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return load_run(
        build_run(tmp_path_factory.mktemp("r") / "run", cpus=[1, 2], seed=61, injector=Injector(cpu=1), lost_events=5)
    )


def test_histograms_count_every_detour_on_log_bins(run):
    d = build_report_data(run)
    det = run.detours.column("cpu").to_numpy()
    for h in d["histograms"]:
        assert sum(h["counts"]) == int((det == h["cpu"]).sum())
        ratios = np.diff(np.log10(h["edges_ns"]))
        assert np.allclose(ratios, ratios[0])  # log-spaced


def test_timeline_adds_up_to_each_cpus_noise(run):
    d = build_report_data(run)
    for t in d["timeline"]:
        total_ppm = np.sum([v for v in t["ppm_by_kind"].values()], axis=0)
        noise_ns = total_ppm.sum() * t["bin_s"] * 1e9 / 1e6
        assert noise_ns == pytest.approx(run.summary["cpus"][str(t["cpu"])]["noise_ns"], rel=1e-6)
        assert total_ppm.max() <= 1e6 * 1.001  # a bin cannot lose more than all its time
    assert "thread" in d["timeline"][0]["ppm_by_kind"]


def test_spread_splits_an_interval_over_the_bins_it_crosses():
    acc = _spread(np.array([5, 95]), np.array([10, 30]), 50, 4)
    assert acc.tolist() == [10, 5, 25, 0]


def test_sources_chains_unexplained_and_warnings(run):
    d = build_report_data(run)
    assert d["sources"][0]["name"] == "jitterscope-inj"
    assert [x["label"] for x in d["source_distributions"]][0] == "thread:jitterscope-inj"
    assert sum(d["source_distributions"][0]["counts"]) == d["source_distributions"][0]["n"]
    assert d["chains"][0]["label"] == " → ".join(s.split(":", 1)[1] for s in run.summary["chains"][0]["sources"])
    un = d["unexplained"]
    assert sum(un["per_cpu_ns"].values()) == run.summary["unexplained"]["total_ns"]
    assert any("5 kernel trace events were lost" in w for w in d["header"]["warnings"])
    assert "jitterscope-inj" in d["headline"]


def test_write_report_puts_svgs_beside_the_html(run, tmp_path):
    (tmp_path / "x").mkdir()  # the report never creates its directory (issue 17: not /nonexistent as root)
    out = write_report(run.path, tmp_path / "x" / "r.html")
    html = out.read_text()
    # Nothing the browser would fetch: no remote src/href/url().
    assert not re.search(r'(src|href)="(https?:)?//|url\((https?:)?//|@import', html)
    svgs = sorted(p.name for p in out.parent.glob("r-*.svg"))
    assert svgs == sorted(
        f"r-{k}.svg"
        for k in [
            "histogram-cpu1",
            "histogram-cpu2",
            "timeline-cpu1",
            "timeline-cpu2",
            "sources",
            "chains",
            "unexplained",
        ]
    )
    assert html.count('data-figure="') == len(svgs)
