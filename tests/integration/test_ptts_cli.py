"""`jitterscope ptts` end to end: text, JSON, plots, sweep, simulation, approximation, refusals, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import cli_batch, svg
from tests.support.lanes import spread_priority

from .conftest import jitterscope

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ptts"
THESIS = str(EXAMPLES / "thesis-example.yaml")


def test_text_output_prints_predicted_work_before_the_result():
    p = jitterscope("ptts", THESIS, "--deadline", "200ms", check=True)
    out = p.stdout
    assert "hyper-period 40,600 ms, 203 latency trees" in out
    assert "predicted work 406 tree nodes (thesis eq. 5.15)" in out
    assert out.index("predicted work") < out.index("end-to-end latency (exact")
    assert "deadline miss: P(latency > 200 ms)" in out
    assert "frame loss" in out


def test_a_reader_that_stops_reading_is_a_quiet_exit_0():
    """`jitterscope ptts ... | head -0`: the reader has gone before anything is written."""
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run(
            [sys.executable, "-m", "jitterscope", "ptts", THESIS, "--deadline", "200ms"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(w)
    assert p.returncode == 0 and p.stderr == "", p.stderr


def test_json_has_exactly_the_documented_shape():
    p = jitterscope("ptts", THESIS, "--deadline", "200", "--json", check=True)
    d = json.loads(p.stdout)
    assert d["hyperperiod"] == 40600 and d["trees"] == 203
    lat = d["latency"]
    assert set(lat) == {"pmf", "mean", "min", "max", "p50", "p90", "p99", "p999"}
    assert abs(sum(p for _, p in lat["pmf"]) - 1) < 1e-12
    assert all(isinstance(t, float) and 0 < q <= 1 for t, q in lat["pmf"])
    assert lat["min"] == 85 and lat["max"] == 317
    assert 0 < d["deadline_miss"] < 1 and d["deadline"] == 200
    assert d["loss_probability"] == pytest.approx(8.5688e-05, rel=1e-4)
    assert d["predicted_work"] == 406
    assert "predicted work" in p.stderr  # notes go to stderr with --json


def test_deadline_miss_is_absent_unless_asked():
    d = json.loads(jitterscope("ptts", THESIS, "--json", check=True).stdout)
    assert "deadline_miss" not in d


def test_plots_are_written(tmp_path):
    jitterscope("ptts", str(EXAMPLES / "xray-e.yaml"), "--deadline", "160ms", "--plots", str(tmp_path), check=True)
    for stem in ("ptts-pmf", "ptts-cdf"):
        fig = svg.read(tmp_path / f"{stem}.svg")
        assert fig.shows("end-to-end latency (", "probability" if stem == "ptts-pmf" else "P(latency <= x)")
        assert (tmp_path / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"


def test_sweep_of_an_offset(tmp_path):
    p = jitterscope(
        "ptts",
        str(EXAMPLES / "xray-e.yaml"),
        "--sweep",
        "wall.offset=0..80:10",
        "--deadline",
        "160",
        "--json",
        "--plots",
        str(tmp_path),
        check=True,
    )
    d = json.loads(p.stdout)
    pts = d["sweep"]["points"]
    assert [pt["offset"] for pt in pts] == [0, 10, 20, 30, 40, 50, 60, 70, 80]
    means = [pt["latency"]["mean"] for pt in pts]
    assert len(set(round(m, 6) for m in means)) > 1  # the phase matters (thesis figure 5.14)
    assert all("deadline_miss" in pt and "loss_probability" in pt for pt in pts)
    assert svg.read(tmp_path / "ptts-sweep.svg").shows("end-to-end latency against wall.offset")
    assert (tmp_path / "ptts-sweep.png").read_bytes()[:4] == b"\x89PNG"
    txt = jitterscope("ptts", str(EXAMPLES / "xray-e.yaml"), "--sweep", "wall.offset=0..80:40", check=True).stdout
    assert "offsets act modulo the period" in txt


def test_simulate_reports_its_distance_to_the_exact_result():
    p = jitterscope("ptts", THESIS, "--method", "simulate", "--iterations", "3000", "--seed", "1", "--json", check=True)
    d = json.loads(p.stdout)
    s = d["simulation"]
    assert s["iterations"] == 3000
    # 3000 draws: the sampled CDF is within the DKW band of the exact one (95%; the seed is pinned), and the
    # total variation distance bounds the Kolmogorov one from above for distributions on one support
    assert s["kolmogorov"] <= s["dkw95"]
    assert s["kolmogorov"] <= s["total_variation"]
    assert s["dkw95"] == pytest.approx(0.0248, abs=1e-3)
    assert "exact_loss_probability" in s
    txt = jitterscope("ptts", THESIS, "--method", "simulate", "--iterations", "2000", "--seed", "1").stdout
    assert "distance to the exact result: Kolmogorov" in txt


def test_too_long_exact_analysis_is_refused_with_the_estimate(refusals):
    code, stderr, stdout = refusals["too-long"]
    assert code == 2
    err = stderr.strip()
    assert len(err.splitlines()) == 1
    assert "1,388,611 latency trees" in err and "eq. 5.15" in err and "--approximate" in err
    assert "predicted work 4,165,833" in stdout  # printed before the refusal


def test_analysis_too_big_for_memory_is_refused(refusals):
    code, stderr, _ = refusals["too-big"]
    assert code == 2
    assert "GiB" in stderr and "1,053,924,187 latency trees" in stderr and "--approximate" in stderr


def test_approximate_reports_the_change_and_the_error():
    p = jitterscope("ptts", str(EXAMPLES / "config-b.yaml"), "--approximate", "0.002s", "--json", check=True)
    d = json.loads(p.stdout)
    a = d["approximation"]
    assert a["trees_from"] == 13861 and d["trees"] < 13861
    assert any(x["change"] != 0 for x in a["periods"])
    assert a["error"]["against"] == "exact"
    assert 0 <= a["error"]["kolmogorov"] < 0.1
    # when the original is itself too long, the error is measured against a simulation of it
    p = jitterscope(
        "ptts",
        str(EXAMPLES / "config-c.yaml"),
        "--approximate",
        "0.05s",
        "--max-time",
        "0.2s",  # config c is predicted to take about 0.4 s
        "--iterations",
        "2000",
        "--seed",
        "2",
        "--json",
        check=True,
    )
    e = json.loads(p.stdout)["approximation"]["error"]
    assert e["against"] == "simulation" and e["iterations"] == 2000 and e["dkw95"] > 0


def test_tree_printout_matches_seed_figure_5_4():
    out = jitterscope("ptts", THESIS, "--tree", "0", check=True).stdout
    assert "--0.58--> (process, 146 ms)" in out
    assert "293 ms  0.026" in out


BAD = [
    (
        "period-off-resolution",
        "resolution: 0.1ms\ncomponents:\n  - {name: gpu, period: 16.66ms, etp: {pmf: {1ms: 1.0}}}\n",
        ["'gpu'", "period", "resolution"],
    ),
    (
        "pmf-sum",
        "resolution: 1ms\ncomponents:\n  - {name: cam, period: 10ms, etp: {pmf: {1ms: 0.5, 2ms: 0.2}}}\n",
        ["'cam'", "etp.pmf", "sum to 0.7"],
    ),
    (
        "uniform-empty",
        "resolution: 1ms\ncomponents:\n  - {name: cam, period: 10ms, etp: {uniform: [5ms, 2ms]}}\n",
        ["'cam'", "etp.uniform", "empty"],
    ),
    (
        "pmf-negative",
        "resolution: 1ms\ncomponents:\n  - {name: cam, period: 10ms, etp: {pmf: {-2ms: 1.0}}}\n",
        ["'cam'", "etp.pmf", "negative"],
    ),
    (
        "unknown-key",
        "resolution: 1ms\ncomponents:\n  - {name: cam, period: 10ms, ofset: 2ms, etp: {pmf: {1ms: 1.0}}}\n",
        ["'cam'", "unknown key 'ofset'"],
    ),
    (
        "hyper-period",
        "resolution: 1ns\ncomponents:\n"
        + "".join(
            f"  - {{name: c{i}, period: {p}ns, etp: {{pmf: {{1ns: 1.0}}}}}}\n"
            for i, p in enumerate([1000003, 1000033, 1000037, 1000039])
        ),
        ["'c3'", "period", "hyper-period"],
    ),
]
BAD_OPTIONS = {
    "deadline-fast": ["--deadline", "fast"],
    "sweep-nobody": ["--sweep", "nobody.offset=0..10:5"],
    "sweep-speed": ["--sweep", "wall.speed=1"],
    "tree-999": ["--tree", "999"],
    "iterations-0": ["--iterations", "0", "--method", "simulate"],
}
# also run as `python -m jitterscope`: the real entry point's start-up and exit path
REAL = {"deadline-fast"}
BIG = (
    "resolution: 0.01ms\ncomponents:\n"
    "  - {name: a, period: 10.09ms, etp: {uniform: [5ms, 30ms]}}\n"
    "  - {name: b, period: 10.13ms, etp: {uniform: [2ms, 6ms]}}\n"
    "  - {name: c, period: 10.19ms, etp: {uniform: [1ms, 3ms]}}\n"
    "  - {name: d, period: 10.21ms, etp: {pmf: {2ms: 1.0}}}\n"
)


@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    """Every refusal of this file through cli.main in one process (tests/support/cli_batch.py), the REAL ones
    also as the real tool beside it, all with a state directory of their own (as a free test's runs are):
    name -> (exit code, stderr, stdout)."""
    tmp = tmp_path_factory.mktemp("refusals")
    cases = []
    for name, text, _ in BAD:
        (tmp / f"{name}.yaml").write_text(text)
        cases.append((name, ["ptts", str(tmp / f"{name}.yaml")]))
    cases += [(name, ["ptts", str(EXAMPLES / "xray-e.yaml"), *args]) for name, args in BAD_OPTIONS.items()]
    cases.append(("too-long", ["ptts", str(EXAMPLES / "config-c.yaml"), "--max-time", "0.1s"]))
    (tmp / "big.yaml").write_text(BIG)
    cases.append(("too-big", ["ptts", str(tmp / "big.yaml"), "--max-time", "1h"]))
    env = {**os.environ, "JITTERSCOPE_STATE_DIR": str(tmp / "state")}
    with spread_priority():
        return cli_batch.batch_and_real(cases, REAL, tmp, env)


@pytest.mark.parametrize("name", [name for name, _, _ in BAD])
def test_bad_model_is_one_line_exit_2(refusals, name):
    code, stderr, stdout = refusals[name]
    assert code == 2, stdout + stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jitterscope: error:")
    for w in {case: words for case, _, words in BAD}[name]:
        assert w in lines[0]


@pytest.mark.parametrize("name", [*BAD_OPTIONS, *(name + cli_batch.REAL for name in sorted(REAL))])
def test_bad_options_exit_2(refusals, name):
    code, stderr, _ = refusals[name]
    args = BAD_OPTIONS[name.removesuffix(cli_batch.REAL)]
    assert code == 2, (args, stderr)
    assert len(stderr.strip().splitlines()) == 1, (args, stderr)
