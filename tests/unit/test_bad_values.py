"""No traceback and an actionable line, whatever the value (issue 25, items 2, 7 and 8).

Table-driven, in-process through cli.main: each class of bad value across every command
that takes that kind of value.  Every case must exit 2 with one line on stderr that
contains the words given (the thing to fix), and never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterscope.cli import main
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import create_run_dir
from tests.support.cli_run import run_cli

NOT_UTF8 = "x\udcff"  # what Python makes of the byte 0xff in a command line
SIM = ["--nodes", "4", "--phases", "10", "--phase", "1ms"]


_run = run_cli


def _one_line(code: int, err: str, words: str) -> None:
    assert code == 2, f"exit {code}: {err}"
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert words in err, err


# every option or argument that names a file or directory, given an empty string
EMPTY_PATHS = {
    "export-o": ["export", "RUN", "-f", "csv", "-o", ""],
    "export-run": ["export", "", "-f", "csv", "-o", "x.csv"],
    "report-run": ["report", ""],
    "report-out": ["report", "RUN", "--out", ""],
    "compare": ["compare", "", "RUN"],
    "analyze": ["analyze", ""],
    "measure-out": ["measure", "--out", ""],
    "sync-out": ["sync", "--out", "", "--", "true"],
    "inject-truth": ["inject", "--cpu", "0", "--period", "10ms", "--busy", "1ms", "--truth", ""],
    "ptts-model": ["ptts", ""],
    "ptts-plots": ["ptts", "MODEL", "--plots", ""],
    "doe-plan": ["doe", "run", ""],
    "doe-out": ["doe", "run", "PLAN", "--out", ""],
    "doe-analyze": ["doe", "analyze", ""],
    "tune-plan-out": ["tune", "plan", "RUN", "--out", ""],
    "whatif-capture-out": ["whatif", "capture", "--out", "", "--", "true"],
    "whatif-dvfs-run": ["whatif", "dvfs", ""],
    "monitor-history": ["monitor", "--history", ""],
    "cluster-out": ["cluster", "measure", "--out", ""],
    "fit-plots": ["fit", "RUN", "--phase", "1ms", "--plots", ""],
    "simulate-plots": ["simulate", "--noise", "normal(mean=1ms,sd=0.1ms)", *SIM, "--plots", ""],
    "pipeline-o": ["pipeline", "compile", "GRAPH", "-o", ""],
    "pipeline-etp-o": ["pipeline", "etp", "RUN", "-o", ""],
    "place-labels-out": ["place", "--profile", "cachegrind", "--labels-out", "", "--cmd", "true"],
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from tests.fixtures_runs import build_run

    d = tmp_path_factory.mktemp("inputs")
    run = build_run(d / "run", seed=3, duration_s=1.0)
    (d / "model.yaml").write_text("resolution: 1ms\ncomponents:\n  - {name: a, period: 10ms, etp: {pmf: {1ms: 1}}}\n")
    (d / "plan.yaml").write_text(
        "response: {command: [true], cpus: 0, estimate: 1s}\n"
        'factors:\n  - {name: one, kind: custom, low: "true", high: "true", restore: "true"}\n'
    )
    graph = Path(__file__).resolve().parents[2] / "examples" / "pipeline" / "appendix.yaml"
    return {"RUN": str(run), "MODEL": str(d / "model.yaml"), "PLAN": str(d / "plan.yaml"), "GRAPH": str(graph)}


@pytest.mark.parametrize("case", sorted(EMPTY_PATHS))
def test_an_empty_path_is_refused_by_name(case, inputs, capsys) -> None:
    argv = [inputs.get(a, a) for a in EMPTY_PATHS[case]]
    code, err = _run(argv, capsys)
    _one_line(code, err, "an empty path")


# a value that is not UTF-8, wherever it goes (a path, a task name, a label)
NON_UTF8 = {
    "measure-out": ["measure", "--duration", "1s", "--out", f"/tmp/{NOT_UTF8}"],
    "sync-out": ["sync", "--out", f"/tmp/{NOT_UTF8}", "--", "true"],
    "analyze": ["analyze", f"/tmp/{NOT_UTF8}"],
    "report": ["report", f"/tmp/{NOT_UTF8}"],
    "export-o": ["export", "RUN", "-f", "csv", "-o", f"/tmp/{NOT_UTF8}.csv"],
    "inject-name": ["inject", "--cpu", "0", "--period", "10ms", "--busy", "1ms", "--name", NOT_UTF8],
    "place-declare": ["place", "--dry-run", "--declare", f"{NOT_UTF8}=heavy", "--tasks", "1"],
}


@pytest.mark.parametrize("case", sorted(NON_UTF8))
def test_a_value_that_is_not_utf8_is_one_line(case, inputs, capsys) -> None:
    argv = [inputs.get(a, a) for a in NON_UTF8[case]]
    code, err = _run(argv, capsys)
    _one_line(code, err, "not valid UTF-8")


def test_what_follows_the_double_dash_is_the_programs_own(capsys) -> None:
    from jitterscope.cli import _not_utf8

    assert _not_utf8(["sync", "--", "cat", NOT_UTF8]) is None
    assert _not_utf8(["sync", "--out", NOT_UTF8, "--", "cat"]) is not None


# a number too large for a float: not "must be positive", but the range to use
OVERFLOWS = {
    "duration": (["measure", "--duration", "1e400s"], "too long: use 100ms to 7 days"),
    "duration-negative": (["measure", "--duration=-1e400s"], "must be positive"),
    "duration-nan": (["measure", "--duration", "nanms"], "malformed --duration"),
    "buffer": (["measure", "--duration", "1s", "--buffer", "1e400G"], "too large"),
    "nodes": (["simulate", "--noise", "normal(mean=1ms,sd=0.1ms)", "--nodes", "1e400", *SIM[2:]], "beyond"),
    "replicates": (["fit", "RUN", "--phase", "1ms", "--replicates", "1e400"], "must be from 19"),
    "iterations": (["ptts", "MODEL", "--method", "simulate", "--iterations", "1e400"], "must be from 1"),
    "ptts-deadline": (["ptts", "MODEL", "--deadline", "1e400ms"], "below 2^62"),
}


@pytest.mark.parametrize("case", sorted(OVERFLOWS))
def test_an_overflowing_number_names_the_range(case, inputs, capsys) -> None:
    argv, words = OVERFLOWS[case]
    code, err = _run([inputs.get(a, a) for a in argv], capsys)
    _one_line(code, err, words)


def test_the_inject_period_bound_is_one_bound(capsys) -> None:
    # limits.md, the option's range error and the injector's own check said 1us, 1us and 10us
    text = (Path(__file__).resolve().parents[2] / "docs" / "limits.md").read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| `--period` | inject"))
    code, err = _run(["inject", "--cpu", "0", "--period", "9us", "--busy", "1us"], capsys)
    _one_line(code, err, "use 10us to 1h")
    assert "| 10us | 1h |" in row
    from jitterscope.measure.inject import validate

    with pytest.raises(JitterscopeError, match="use 10us to 1h"):
        validate(0, 5_000, 1_000, None, "x", "other", 1)


def test_a_run_directory_gets_no_parents(tmp_path) -> None:
    with pytest.raises(JitterscopeError, match="no such directory .*not created for you"):
        create_run_dir(tmp_path / "nonexistent" / "dir" / "x")
    assert not (tmp_path / "nonexistent").exists()
    assert create_run_dir(tmp_path / "run").is_dir()


def test_the_default_run_root_is_made_in_the_current_directory(tmp_path, monkeypatch) -> None:
    from jitterscope.rundir import new_run_path

    monkeypatch.chdir(tmp_path)
    assert create_run_dir(new_run_path("x")).is_dir()


def test_pipeline_compile_explain_writes_nothing_unasked(inputs, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["pipeline", "compile", inputs["GRAPH"], "--explain"]) == 0
    assert "add --gantt FILE.svg" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # it once drew GRAPH-HEURISTIC-gantt.svg here
    assert main(["pipeline", "compile", inputs["GRAPH"], "--explain", "--gantt", "g.svg"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["g.svg"]


@pytest.mark.parametrize("value", ["-1", '"x"', "99", "1.5"])
def test_a_union_field_error_names_the_key_not_pydantics_member(value, tmp_path, capsys) -> None:
    g = tmp_path / "g.yaml"
    g.write_text(
        "name: g\nimage: {width: 16, height: 16, pixel: int32}\n"
        f"boxes:\n  a: {{kernel: source, outputs: {value}}}\n  b: {{kernel: sink}}\nedges:\n  - a.out -> b.in\n"
    )
    code, err = _run(["pipeline", "compile", str(g)], capsys)
    _one_line(code, err, f"{g}: boxes.a.outputs must be")
    assert "constrained" not in err


def test_a_resolution_takes_every_duration_unit() -> None:
    from jitterscope.ptts.etp import ModelError, parse_time_ns

    assert parse_time_ns("1h", "--resolution") == 3600 * 10**9 and parse_time_ns("2min", "x") == 120 * 10**9
    with pytest.raises(ModelError, match=r"unknown unit 'fortnight' .*use ns, us, ms, s, min or h"):
        parse_time_ns("1fortnight", "--resolution")


def test_a_long_ptts_simulation_is_announced_estimated_and_refused(inputs, capsys) -> None:
    # --iterations 1e9 once ran silently for minutes (and drew a list of 1e9 Python ints first)
    code, err = _run(
        ["ptts", inputs["MODEL"], "--method", "simulate", "--iterations", "1e7", "--max-time", "1ms"], capsys
    )
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, err
    assert lines[0].startswith("ptts: simulating 10,000,000 frames") and len(lines) == 2, err
    assert "would take" in lines[1] and "--max-time 1ms" in lines[1], err


def test_a_ptts_simulation_reports_its_progress_and_keeps_its_frames(inputs) -> None:
    from jitterscope.ptts.model import load_model
    from jitterscope.ptts.simulate import CHUNK, simulate

    model = load_model(inputs["MODEL"])
    seen: list[float] = []
    a = simulate(model, 3 * CHUNK, seed=5, progress=seen.append)
    b = simulate(model, 3 * CHUNK, seed=5)
    assert seen == [1 / 3, 2 / 3]
    assert a.latency.times.tolist() == b.latency.times.tolist() and a.loss == b.loss
