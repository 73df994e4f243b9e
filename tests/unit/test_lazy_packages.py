"""Packages whose public names bring scipy.stats (about 2 s here) import them only when one is used:
`jitterscope.simulate` (its engine), which every rank of `cluster bsp` and the report of a cluster run reach
through `simulate.timeline` or `simulate.results` alone, and `jitterscope.monitor` (its loop, through
compare's statistics), which `monitor --print-unit` and `--print-rules` reach through `monitor.unit` and
`monitor.shipped` alone."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

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


def test_protect_starts_its_program_without_scipy() -> None:
    """scipy.stats (1.2 s here) serves only the delivery interval of the analysis, after the program ran."""
    code = "import sys, jitterscope.protect.session\nprint([m for m in sys.modules if m.startswith('scipy.stats')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_public_name_is_its_modules_own() -> None:
    assert sorted(simulate.__all__) == sorted(simulate._HOME)
    for name, home in simulate._HOME.items():
        assert getattr(simulate, name) is getattr(importlib.import_module(f"jitterscope.simulate.{home}"), name)
    assert set(simulate.__all__) <= set(dir(simulate))
    loop = importlib.import_module("jitterscope.monitor.loop")
    assert [getattr(monitor, n) for n in monitor.__all__] == [loop.Monitor, loop.MonitorOptions]
