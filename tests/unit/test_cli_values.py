"""What a new user typed: a negative value with a unit (`--duration -3s`) is refused for what it is, not read as an
unknown option ("expected one argument"); a file given as a run is said to be a file."""

from __future__ import annotations

import pytest

from jitterscope import cli


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["measure", "--duration", "-3s"], "--duration '-3s' must be positive"),
        (["measure", "--duration", "-0.5ms"], "--duration '-0.5ms' must be positive"),
        (["sync", "--threshold", "-5us", "--", "true"], "--threshold '-5us' must be positive"),
        (["inject", "--cpu", "0", "--period", "-10ms", "--busy", "1ms"], "--period '-10ms' must be positive"),
    ],
)
def test_a_negative_value_with_a_unit_is_refused_for_what_it_is(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"jitterscope: error: {message}"], err


def test_an_unknown_option_is_still_one(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["measure", "--duration", "-x"])
    assert exit_.value.code == 2 and "expected one argument" in capsys.readouterr().err


def test_a_file_given_as_a_run_is_said_to_be_one(tmp_path, capsys):
    """analyze, report (load_run) and the rest said "no such run directory" of a file that exists."""
    f = tmp_path / "summary.txt"
    f.write_text("x")
    for argv in (["analyze", str(f)], ["report", str(f)]):
        assert cli.main(argv) == 2
        assert capsys.readouterr().err.strip() == f"jitterscope: error: {f}: not a directory (a run is a directory)"
    assert cli.main(["report", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip() == f"jitterscope: error: {tmp_path / 'none'}: no such run directory"
