"""`jitterscope simulate` and `jitterscope fit` as a user runs them."""

from __future__ import annotations

import json
import os

import pytest

from jitterscope.simulate.render import fit_text
from tests.support import cli_batch, svg
from tests.support.lanes import spread_priority
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

    text = fit_text(fit)  # what `fit` prints without --json, from the same result (a second fit cost 2-8 s)
    assert "verdict: no family fits" in text and "rank" in text

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


# (case, the options that differ from BASE, words in the error): each refused in one line with exit 2
BAD = [
    ("unknown-family", ["--noise", "cauchy(scale=1ms)"], "unknown noise family"),
    ("missing-sd", ["--noise", "normal(mean=1ms)"], "missing sd"),
    ("negative-mean", ["--noise", "exponential(mean=-1ms)"], "negative"),
    ("unknown-unit", ["--noise", "exponential(mean=1 fortnight)"], "unit"),
    ("phase-without-unit", ["--noise", "exponential(mean=1ms)", "--phase", "10"], "needs a unit"),
    ("zero-nodes", ["--noise", "exponential(mean=1ms)", "--nodes", "0"], "positive"),
    ("by-source-of-a-model", ["--noise", "exponential(mean=1ms)", "--by-source"], "needs a measured run"),
    ("no-run", ["--noise", "/nonexistent/run"], "no such run directory"),
]
BASE = {"--noise": "exponential(mean=1ms)", "--nodes": "10", "--phases": "10", "--phase": "1ms"}
# also run as `python -m jitterscope`: the real entry point's start-up, imports and exit path
REAL = {"unknown-family"}


def simulate_argv(args: list[str]) -> list[str]:
    base = dict(BASE)
    for i in range(0, len(args), 2):
        if i + 1 < len(args) and args[i] in base:
            base[args[i]] = args[i + 1]
    argv = ["simulate"]
    for k, v in base.items():
        argv += [k, v]
    return argv + [a for a in args if a == "--by-source"]


@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    """Every refusal of this file through cli.main in one process (tests/support/cli_batch.py), the REAL ones
    also as the real tool beside it, all with a state directory of their own (as a free test's runs are)."""
    tmp = tmp_path_factory.mktemp("refusals")
    untraced = write_noise_run(tmp / "u", [periodic_source("irq", "tick", 1, 1e6, 5e3, 1e9)], 1.0, tracing=False)
    cases = [(name, simulate_argv(args)) for name, args, _ in BAD] + [
        (
            "untraced-by-source",
            ["simulate", "--noise", str(untraced), "--by-source", "--nodes", "10", "--phases", "10", "--phase", "1ms"],
        ),
        (
            "untraced-absurd-size",
            ["simulate", "--noise", str(untraced), "--nodes", "1e12", "--phases", "100", "--phase", "1ms"],
        ),
    ]
    env = {**os.environ, "JITTERSCOPE_STATE_DIR": str(tmp / "state")}
    with spread_priority():
        return untraced, cli_batch.batch_and_real(cases, REAL, tmp, env)


@pytest.mark.parametrize("name", [name for name, _, _ in BAD] + [name + cli_batch.REAL for name in sorted(REAL)])
def test_bad_input_is_one_line_exit_2(refusals, name):
    _, got = refusals
    code, err, _ = got[name]
    words = {case: words for case, _, words in BAD}[name.removesuffix(cli_batch.REAL)]
    assert code == 2, (code, err)
    assert words in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_untraced_run_by_source_and_absurd_size(refusals):
    run, got = refusals
    code, err, _ = got["untraced-by-source"]
    assert code == 2 and "no attribution" in err and err.count("\n") == 1, (code, err)
    code, err, _ = got["untraced-absurd-size"]
    assert code == 2 and "fits up to" in err and f"fit:{run}" in err, (code, err)
