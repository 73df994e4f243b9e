"""`jitterscope.simulate` imports its engine (and with it scipy.stats, about 2 s here) only when one of its
names is used: every rank of `cluster bsp` and the report of a cluster run import `simulate.timeline` or
`simulate.results` alone."""

from __future__ import annotations

import importlib
import subprocess
import sys

import jitterscope.simulate as simulate


def test_a_submodule_alone_does_not_import_the_engine() -> None:
    code = (
        "import sys, jitterscope.simulate.timeline, jitterscope.simulate.results\n"
        "print(sorted(m for m in sys.modules if m.startswith(('scipy.stats', 'jitterscope.simulate.engine'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_public_name_is_its_modules_own() -> None:
    assert sorted(simulate.__all__) == sorted(simulate._HOME)
    for name, home in simulate._HOME.items():
        assert getattr(simulate, name) is getattr(importlib.import_module(f"jitterscope.simulate.{home}"), name)
    assert set(simulate.__all__) <= set(dir(simulate))
