"""What reads a pipeline run: ETP export (binning), compare, late-iteration summary (synthetic runs, no native)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from jitterscope.pipeline.compare import compare_pipelines
from jitterscope.pipeline.etp import profile, write_csv
from jitterscope.pipeline.late import late_summary
from jitterscope.pipeline.stats import latency_stats
from jitterscope.ptts.model import model_from_dict
from jitterscope.rundir import base_meta, load_run, write_json, write_table


def fake_run(d: Path, latency_ns: np.ndarray, graph_digest: str = "g1") -> Path:
    d.mkdir()
    n = len(latency_ns)
    start = np.arange(n, dtype=np.int64) * 10_000_000
    write_table(
        d,
        "iterations",
        pa.table(
            {
                "iteration": np.arange(n),
                "release_ns": start,
                "start_ns": start,
                "end_ns": start + latency_ns,
                "latency_ns": latency_ns,
            }
        ),
        kind="pipeline",
    )
    write_table(
        d,
        "outputs",
        pa.table({"iteration": np.arange(n), "sink": ["k"] * n, "digest": pa.array(np.arange(n, dtype=np.uint64))}),
        kind="pipeline",
    )
    write_json(
        d / "meta.json",
        base_meta(kind="pipeline", id=d.name, host="h", duration_s=1.0, cpus=[0, 1], graph={"digest": graph_digest}),
    )
    write_json(
        d / "summary.json",
        {
            "run": {"graph": "g", "heuristic": "fixed", "memory": "reuse", "threads": 2, "iterations": n},
            "latency": latency_stats(latency_ns),
            "outputs": {"digest": "abc"},
        },
    )
    return d


def test_etp_rounds_up_to_whole_ticks_and_reads_back_in_ptts(tmp_path):
    lat = np.array([4_921_001, 4_930_000, 4_930_001, 5_000_000, 4_921_001], dtype=np.int64)
    run = fake_run(tmp_path / "r", lat)
    info = write_csv(profile(run, "10us"), tmp_path / "p.csv")
    rows = [ln.split(",") for ln in (tmp_path / "p.csv").read_text().splitlines() if ln[:1].isdigit()]
    assert rows == [["4930us", "0.6"], ["4940us", "0.2"], ["5000us", "0.2"]]  # ceil: never shorter
    assert info["values"] == 3 and info["iterations"] == 5
    m = model_from_dict(
        {"resolution": "10us", "components": [{"name": "p", "period": "40ms", "etp": {"csv": "p.csv"}}]},
        base_dir=tmp_path,
    )
    etp = m.components[0].etp
    assert abs(etp.prob.sum() - 1) < 1e-12 and list(etp.support) == [493, 494, 500]
    # a decimal resolution in another unit: exact decimals
    write_csv(profile(run, "0.05ms"), tmp_path / "q.csv")
    assert "4.95ms" in (tmp_path / "q.csv").read_text()
    m = model_from_dict(
        {"resolution": "0.05ms", "components": [{"name": "p", "period": "40ms", "etp": {"csv": "q.csv"}}]},
        base_dir=tmp_path,
    )
    assert m.components[0].etp.support[0] == int(Fraction("4.95") / Fraction("0.05"))


def test_the_shipped_chain_model_reads_an_exported_profile(tmp_path):
    """examples/pipeline/ptts/chain.yaml (the docs' last step) with a profile `pipeline etp` wrote beside it."""
    import shutil

    from jitterscope.ptts import exact
    from jitterscope.ptts.model import load_model

    chain = Path(__file__).resolve().parents[2] / "examples" / "pipeline" / "ptts" / "chain.yaml"
    shutil.copy(chain, tmp_path / "chain.yaml")
    lat = np.array([1_040_000, 1_200_000, 9_415_000, 47_495_000], dtype=np.int64)
    write_csv(profile(fake_run(tmp_path / "r", lat), "10us"), tmp_path / "pipeline.csv")
    r = exact.analyse(load_model(tmp_path / "chain.yaml"))
    assert abs(r.latency.probs.sum() - 1) < 1e-12


def test_etp_refuses_other_kinds_and_bad_resolution(tmp_path):
    from jitterscope.errors import JitterscopeError

    run = fake_run(tmp_path / "r", np.array([1000, 2000]))
    with pytest.raises(JitterscopeError, match="resolution"):
        profile(run, "-1us")
    with pytest.raises(JitterscopeError, match="no such run"):
        profile(tmp_path / "none", "10us")


def test_compare_sees_a_shift_and_a_spread(tmp_path):
    rng = np.random.default_rng(1)
    base = (1_000_000 + rng.normal(0, 10_000, 2000)).astype(np.int64)
    same = (1_000_000 + rng.normal(0, 10_000, 2000)).astype(np.int64)
    worse = (1_000_000 + rng.normal(0, 40_000, 2000)).astype(np.int64)
    slower = (1_300_000 + rng.normal(0, 10_000, 2000)).astype(np.int64)
    b = load_run(fake_run(tmp_path / "b", base))

    class Th:
        alpha, min_ratio = 0.01, 1.2

    r = compare_pipelines(b, load_run(fake_run(tmp_path / "s", same)), Th())
    assert not r["regression"] and r["same_outputs"]
    r = compare_pipelines(b, load_run(fake_run(tmp_path / "w", worse)), Th())
    assert r["regression"] and r["worse"] == ["sd"] and r["ratio"]["sd"] == pytest.approx(4, rel=0.15)
    r = compare_pipelines(b, load_run(fake_run(tmp_path / "l", slower, graph_digest="g2")), Th())
    assert r["worse"] == ["mean"] and r["tests"]["location"]["cliffs_delta"] > 0.99
    assert any("different graphs" in n for n in r["notes"])


def test_late_summary_names_what_only_late_iterations_suffered():
    lat = np.full(1000, 1_000_000.0)
    lat[[10, 500, 900]] = 3_000_000.0  # three late iterations, 2 ms late each
    it, ns, kind, name = [], [], [], []
    for k in range(1000):  # a timer tick everywhere: 20 us per iteration
        it.append(k), ns.append(20_000), kind.append("irq"), name.append("local_timer")
    for k in (10, 500, 900):  # a kworker only in the late ones: 1.5 ms each
        it.append(k), ns.append(1_500_000), kind.append("thread"), name.append("kworker/1:1")
    att = pa.table({"iteration": it, "cpu": [1] * len(it), "kind": kind, "name": name, "ns": ns})
    s = late_summary(lat, att, 99.0)
    assert s["count"] == 3 and s["latency_excess_ns"] == pytest.approx(2_000_000)
    top = s["sources"][0]
    assert (top["kind"], top["name"]) == ("thread", "kworker/1:1")
    assert top["late_ns"] == pytest.approx(1_500_000) and top["typical_ns"] == 0
    assert top["late_iterations_hit"] == 3
    tick = next(x for x in s["sources"] if x["name"] == "local_timer")
    assert tick["excess_ns"] == pytest.approx(0)
    assert s["explained_share"] == pytest.approx(0.75)
