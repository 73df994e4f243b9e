"""An interrupt while a run is built names the directory and `jitterscope analyze DIR` (issue 25, item 8).

SIGTERM reaches a command as KeyboardInterrupt (cli._interrupt); here it is raised where the
signal lands in the issue's report, while the recorded run is being built, and the run is
then finished by the command the message names."""

from __future__ import annotations

import os

import pytest

from jitterscope.cli import main
from jitterscope.errors import JitterscopeError
from jitterscope.native_bin import native_bin
from jitterscope.sync import runner


def _interrupt(*_a: object, **_k: object) -> None:
    raise KeyboardInterrupt


def test_sync_interrupted_while_building_says_how_to_finish(tmp_path, monkeypatch, capsys) -> None:
    try:
        native_bin(runner.LIBRARY)
    except JitterscopeError as err:
        pytest.skip(f"the sync interposer is not built: {err}")
    out = tmp_path / "s"
    from jitterscope.sync import build as sync_build  # runner imports build() from it when it analyses

    build = sync_build.build
    monkeypatch.setattr(sync_build, "build", _interrupt)
    cpu = str(min(os.sched_getaffinity(0)))  # one this process may use now (other sessions move cpusets)
    code = main(["sync", "--out", str(out), "--cpus", cpu, "--no-trace", "--no-report", "--", "true"])
    err = capsys.readouterr().err
    assert code == 130, err
    assert err == (
        f"jitterscope: interrupted while building the run: what was recorded is kept in {out}; "
        f"`jitterscope analyze {out}` finishes it\n"
    )
    monkeypatch.setattr(sync_build, "build", build)
    assert main(["analyze", str(out)]) == 0
    assert (out / "summary.json").exists()
