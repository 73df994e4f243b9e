"""`jitterscope monitor --print-unit`: the unit runs this install with the options given (in-process;
tests/integration/test_monitor_unit.py has systemd check it and runs the monitor with its capabilities)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from jitterscope.cli import build_parser
from jitterscope.errors import JitterscopeError
from jitterscope.sysinfo import online_cpus


def unit(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, str]:
    args = build_parser().parse_args(["monitor", *argv, "--print-unit"])
    assert args._command.run(args) == 0
    text = capsys.readouterr().out
    return dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln and not ln.startswith("#"))


def test_unit_runs_this_install_with_the_options_given(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cpu = str(online_cpus()[-1])
    s = unit(capsys, "--cpus", cpu, "--interval", "5min", "--history", str(tmp_path / "h"))
    words = shlex.split(s["ExecStart"])
    assert Path(words[0]).is_absolute() and Path(words[0]).exists()
    at = words.index("monitor")
    assert words[at + 1 : at + 5] == ["--cpus", cpu, "--interval", "5min"]
    assert words[-2:] == ["--history", str(tmp_path / "h")] and s["ReadWritePaths"] == str(tmp_path / "h")
    assert s["NoNewPrivileges"] == "yes" and s["ProtectSystem"] == "strict" and s["Restart"] == "on-failure"
    assert s["RestartPreventExitStatus"] == "2"  # bad configuration is not restarted in a loop
    assert s["CapabilityBoundingSet"] == "CAP_SYSLOG CAP_SYS_NICE CAP_IPC_LOCK"


def test_default_history_is_the_state_directory(capsys: pytest.CaptureFixture[str]) -> None:
    s = unit(capsys)
    assert shlex.split(s["ExecStart"])[-2:] == ["--history", "/var/lib/jitterscope/monitor"]
    assert "ReadWritePaths" not in s and s["StateDirectory"] == "jitterscope"  # writable already


def test_bad_options_print_no_unit(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["monitor", "--window", "2min", "--interval", "1min", "--print-unit"])
    with pytest.raises(JitterscopeError, match="longer than --interval"):
        args._command.run(args)
    assert capsys.readouterr().out == ""


def test_specifiers_and_spaces_survive_systemd_quoting() -> None:
    from jitterscope.monitor.unit import render_unit

    text = render_unit(["--threshold", "1us"], Path("/srv/js 100%/h"), exec_prefix=["/opt/js/bin/jitterscope"])
    line = next(ln for ln in text.splitlines() if ln.startswith("ExecStart="))
    assert line.endswith('--history "/srv/js 100%%/h"')  # % would be a specifier, a space would split
