"""compare compares what is comparable: runs measured differently never make a regression (issue 17.3)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jitterscope.compare.runs import compare_runs, render_text
from jitterscope.compare.stats import bh_adjust
from tests.fixtures_runs import Injector, build_run


def _set_meta(run: Path, **options) -> None:
    meta = json.loads((run / "meta.json").read_text())
    meta["options"].update(options)
    (run / "meta.json").write_text(json.dumps(meta))


def test_traced_against_untraced_tests_nothing_and_says_why(tmp_path: Path) -> None:
    base = build_run(tmp_path / "traced", seed=1)
    # NEW without tracing and with a daemon: every ns of it is "unexplained", and tracing cost differs
    new = build_run(tmp_path / "untraced", seed=2, tracing=False, injector=Injector(cpu=1, busy_ns=2_000_000))
    for a, b in ((base, new), (new, base)):
        r = compare_runs(a, b)
        assert not r["regression"] and not r["new"] and not r["gone"] and not r["changed"]
        assert not r["total"]["1"]["tested"] and not r["total"]["1"]["significant"]
        assert any(x.startswith("tracing: only") for x in r["not_compared"])
        assert r["tests"] == 0 and r["total"]["1"]["q"] is None  # an untested total is no test of the family
        text = render_text(r)
        assert "nothing tested" in text and "REGRESSION" not in text and "Benjamini-Hochberg over" not in text


def test_different_thresholds_compare_above_the_higher_one(tmp_path: Path) -> None:
    full = build_run(tmp_path / "full", seed=3)
    cut = build_run(tmp_path / "cut", seed=3)
    # the same noise recorded with a 5 us threshold: the shorter detours were never seen
    det = pq.read_table(cut / "detours.parquet")
    keep = det.column("duration_ns").to_numpy() >= 5000
    new_index = np.cumsum(keep) - 1
    att = pq.read_table(cut / "attribution.parquet")
    rows = att.column("detour").to_numpy()
    att = att.filter(pa.array(keep[rows]))
    att = att.set_column(0, "detour", pa.array(new_index[att.column("detour").to_numpy()]))
    pq.write_table(det.filter(pa.array(keep)), cut / "detours.parquet")
    pq.write_table(att, cut / "attribution.parquet")
    _set_meta(cut, threshold_ns=5000)
    r = compare_runs(cut, full)
    assert r["basis"]["threshold_ns"] == 5000
    t = r["total"]["1"]
    assert t["base_ppm"] == pytest.approx(t["new_ppm"]) and not r["regression"]
    assert not r["new"] and not r["gone"] and not r["changed"]
    assert any("thresholds differ" in x for x in r["notes"])


def test_a_realtime_probe_against_a_normal_one_does_not_test_threads(tmp_path: Path) -> None:
    base = build_run(tmp_path / "fifo", seed=4, daemon_period_s=1e3)  # threads could not preempt it
    new = build_run(tmp_path / "normal", seed=5)
    _set_meta(base, priority="fifo:50")
    r = compare_runs(base, new)
    threads = [x for x in r["new"] + r["changed"] if x["kind"] == "thread"]
    assert threads and not any(x["regression"] or x["significant"] for x in threads)
    assert any(x.startswith("priority:") for x in r["not_compared"])
    # the threads' p-values are shown but stay out of the Benjamini-Hochberg family: the q of what is tested
    # is the adjustment of its own p-values alone
    rows = r["new"] + r["gone"] + r["changed"] + r["unchanged"]
    untested = set(r["basis"]["untested_kinds"])
    assert "thread" in untested and any(x["kind"] not in untested for x in rows)
    assert all(x["rate"]["q"] is None and x["rate"]["p"] is not None for x in rows if x["kind"] in untested)
    parts = [x["rate"] for x in rows if x["kind"] not in untested]
    parts += [x["duration"] for x in rows if x["kind"] not in untested and x["duration"]]
    parts += list(r["total"].values()) if r["basis"]["totals_tested"] else []
    assert all(t["q"] is None for t in r["total"].values()) != r["basis"]["totals_tested"]
    assert r["tests"] == len(parts) > 0
    assert [x["q"] for x in parts] == pytest.approx(list(bh_adjust([x["p"] for x in parts])))


def test_runs_of_very_different_lengths_use_one_block_length(tmp_path: Path) -> None:
    short = build_run(tmp_path / "short", seed=6, duration_s=2.0)
    long = build_run(tmp_path / "long", seed=7, duration_s=30.0)
    r = compare_runs(short, long)
    assert r["basis"]["block_ns"] == pytest.approx(2e9 / 20)
    assert not r["regression"] and any("durations differ 15x" in x for x in r["notes"])
