"""`jitterscope simulate` and `jitterscope fit` as a user runs them."""

from __future__ import annotations

import json

import pytest

from tests.support import svg
from tests.support.noise_runs import periodic_source, write_noise_run

from .conftest import jitterscope

RESULT_KEYS = {"nodes", "phases", "phase_s", "runtime_s", "ideal_s", "slowdown", "ci95_s"}
EXACT_KEYS = {"expected_s", "expected_slowdown"}  # the model's exact expectation, where it has one


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("sim") / "run"
    r = 10e9
    return write_noise_run(
        path,
        [
            periodic_source("irq", "local_timer", 1, 1e6, 5e3, r, phase_ns=1234, jitter_ns=200, seed=1),
            periodic_source("thread", "daemon", 1, 1e9, 2e6, r, phase_ns=333e6, seed=2),
        ],
        10.0,
    )


def test_simulate_json_shape_and_plots(tmp_path):
    p = jitterscope(
        "simulate",
        "--noise",
        "normal(mean=1.91ms,sd=0.36ms)",
        "--nodes",
        "1..1e6:log10",
        "--phases",
        "1,100,200",
        "--phase",
        "10ms",
        "--json",
        "--plots",
        str(tmp_path / "plots"),
    )
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert set(data) == {"model", "results"}
    assert data["model"]["noise"] == {"family": "normal", "params": {"mean": 1.91e-3, "sd": 0.36e-3}}
    assert len(data["results"]) == 7 * 3
    for r in data["results"]:
        assert set(r) == RESULT_KEYS | EXACT_KEYS  # i.i.d. delays: the exact mean is known
        assert r["slowdown"] == pytest.approx(r["runtime_s"] / r["ideal_s"] - 1)
        assert r["runtime_s"] == pytest.approx(r["expected_s"], rel=0.02)
        assert r["ci95_s"][0] <= r["runtime_s"] <= r["ci95_s"][1]
    by_n = {r["nodes"]: r["slowdown"] for r in data["results"] if r["phases"] == 100}
    assert sorted(by_n.values()) == [by_n[n] for n in sorted(by_n)]  # grows with N
    for name in ("runtime_vs_nodes.svg", "runtime_vs_phases.svg", "slowdown_heatmap.svg"):
        assert (tmp_path / "plots" / name).read_text().lstrip().startswith("<?xml")


def test_simulate_run_by_source_and_fit(run_dir, tmp_path):
    p = jitterscope(
        "simulate",
        "--noise",
        str(run_dir),
        "--by-source",
        "--nodes",
        "1,1000",
        "--phases",
        "20",
        "--phase",
        "1ms",
        "--replications",
        "3",
        "--json",
        "--plots",
        str(tmp_path),
    )
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["model"]["kind"] == "trace"
    bs = data["by_source"]
    assert bs["nodes"] == 1000 and bs["phases"] == 20
    assert [s["name"] for s in bs["sources"]][0] == "daemon"
    assert svg.read(tmp_path / "by_source.svg").shows("Fix first", "1,000 nodes x 20 phases", "daemon")

    f = jitterscope("fit", str(run_dir), "--phase", "1ms", "--json", "--replicates", "50", "--plots", str(tmp_path))
    assert f.returncode == 0, f.stderr
    fit = json.loads(f.stdout)
    assert {x["family"] for x in fit["families"]} == {"normal", "lognormal", "gamma", "exponential", "weibull"}
    assert fit["verdict"].startswith("no family fits")
    qq = svg.read(tmp_path / "fit_qq.svg")
    assert qq.shows("Q-Q plots", "normal: KS p=", "lognormal: KS p=", "weibull: KS p=", "GPD tail over")
    assert svg.read(tmp_path / "fit_histogram.svg").shows("Per-phase delays, phase 1 ms", "no family fits")

    t = jitterscope("fit", str(run_dir), "--phase", "1ms", "--replicates", "50")
    assert "verdict: no family fits" in t.stdout and "rank" in t.stdout

    s = jitterscope(
        "simulate",
        "--noise",
        f"fit:{run_dir}",
        "--nodes",
        "1,1e12",  # a machine's worth and far past any (each count costs a barrier recursion, 0.25 s)
        "--phases",
        "100",
        "--phase",
        "1ms",
        "--json",
    )
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout)["model"]["fit"]["family"] == "empirical"


@pytest.mark.parametrize(
    "args,words",
    [
        (["--noise", "cauchy(scale=1ms)"], "unknown noise family"),
        (["--noise", "normal(mean=1ms)"], "missing sd"),
        (["--noise", "exponential(mean=-1ms)"], "negative"),
        (["--noise", "exponential(mean=1 fortnight)"], "unit"),
        (["--noise", "exponential(mean=1ms)", "--phase", "10"], "needs a unit"),
        (["--noise", "exponential(mean=1ms)", "--nodes", "0"], "positive"),
        (["--noise", "exponential(mean=1ms)", "--by-source"], "needs a measured run"),
        (["--noise", "/nonexistent/run"], "no such run directory"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, words):
    base = {"--noise": "exponential(mean=1ms)", "--nodes": "10", "--phases": "10", "--phase": "1ms"}
    argv = []
    for i in range(0, len(args), 2):
        if i + 1 < len(args) and args[i] in base:
            base[args[i]] = args[i + 1]
    for k, v in base.items():
        argv += [k, v]
    argv += [a for a in args if a == "--by-source"]
    p = jitterscope("simulate", *argv)
    assert p.returncode == 2
    assert words in p.stderr and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


def test_untraced_run_by_source_and_absurd_size(tmp_path):
    run = write_noise_run(tmp_path / "u", [periodic_source("irq", "tick", 1, 1e6, 5e3, 1e9)], 1.0, tracing=False)
    p = jitterscope("simulate", "--noise", str(run), "--by-source", "--nodes", "10", "--phases", "10", "--phase", "1ms")
    assert p.returncode == 2 and "no attribution" in p.stderr and p.stderr.count("\n") == 1
    q = jitterscope("simulate", "--noise", str(run), "--nodes", "1e12", "--phases", "100", "--phase", "1ms")
    assert q.returncode == 2 and "fits up to" in q.stderr and f"fit:{run}" in q.stderr
