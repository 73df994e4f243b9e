"""Packages whose public names bring scipy.stats (1.4-2 s here) import them only when one is used:
`jitterscope.simulate` (its engine), which every rank of `cluster bsp` and the report of a cluster run reach
through `simulate.timeline` or `simulate.results` alone, and `jitterscope.monitor` (its loop, through
compare's statistics), which `monitor --print-unit` and `--print-rules` reach through `monitor.unit` and
`monitor.shipped` alone; and `jitterscope.compare` (its tests), which `check` without a baseline reaches
through `compare.thresholds` and `compare.results` alone."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import jitterscope.compare as compare
import jitterscope.monitor as monitor
import jitterscope.simulate as simulate

CASES = {
    "simulate": (("timeline", "results"), "engine"),
    "monitor": (("unit", "shipped"), "loop"),
}


@pytest.mark.parametrize("package", sorted(CASES))
def test_a_submodule_alone_does_not_import_the_heavy_ones(package: str) -> None:
    light, heavy = CASES[package]
    code = (
        f"import sys, {', '.join(f'jitterscope.{package}.{m}' for m in light)}\n"
        f"print(sorted(m for m in sys.modules if m.startswith(('scipy.stats', 'jitterscope.{package}.{heavy}'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "module",
    [
        "jitterscope.protect.session",  # scipy.stats serves the delivery interval, after the program ran
        "jitterscope.check.run",  # it serves compare's tests, with a baseline only
    ],
)
def test_a_command_starts_without_scipy(module: str) -> None:
    """Modules a command imports before it measures or starts its program."""
    code = f"import sys, {module}\nprint([m for m in sys.modules if m.startswith('scipy.stats')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_public_name_is_its_modules_own() -> None:
    assert sorted(simulate.__all__) == sorted(simulate._HOME)
    for name, home in simulate._HOME.items():
        assert getattr(simulate, name) is getattr(importlib.import_module(f"jitterscope.simulate.{home}"), name)
    assert set(simulate.__all__) <= set(dir(simulate))
    for name, home in compare._HOME.items():
        assert getattr(compare, name) is getattr(importlib.import_module(f"jitterscope.compare.{home}"), name)
    loop = importlib.import_module("jitterscope.monitor.loop")
    assert [getattr(monitor, n) for n in monitor.__all__] == [loop.Monitor, loop.MonitorOptions]
