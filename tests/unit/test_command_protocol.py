"""Every module under commands/ is a listed `Command`: mypy checks the listed ones against the
protocol (cli.COMMANDS is typed with it), and this test checks that none is left out of the list
and that each one's functions have the protocol's shape at run time too."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import jitterscope.commands
from jitterscope import cli
from jitterscope.commands import Command


def command_modules() -> dict[str, ModuleType]:
    pkg = jitterscope.commands
    return {
        info.name.replace("_", "-"): importlib.import_module(f"jitterscope.commands.{info.name}")
        for info in pkgutil.iter_modules(pkg.__path__)
        if not info.name.startswith("_")
    }


def test_every_command_module_is_listed() -> None:
    found = command_modules()
    assert len(found) > 10, "the command modules were not found"
    assert sorted(found) == sorted(cli.COMMANDS), "a module under commands/ is missing from cli.COMMANDS (or extra)"
    for name, mod in found.items():
        assert cli.COMMANDS[name] is mod


def test_every_command_has_the_protocols_shape() -> None:
    for name, mod in command_modules().items():
        assert isinstance(mod, Command), f"{name}: no add_arguments or run"
        assert (mod.__doc__ or "").strip(), f"{name}: no docstring (its --help)"
        assert "EXAMPLES" in (mod.__doc__ or ""), f"{name}: its docstring has no EXAMPLES block"
        add = inspect.signature(mod.add_arguments)
        run = inspect.signature(mod.run)
        assert len(add.parameters) == 1 and add.return_annotation in ("None", None), f"{name}.add_arguments"
        assert len(run.parameters) == 1 and run.return_annotation == "int", f"{name}.run must return int"


def test_a_module_without_run_is_not_a_command() -> None:
    mod = ModuleType("half")
    mod.add_arguments = lambda parser: None  # type: ignore[attr-defined]
    assert not isinstance(mod, Command)
    mod.run = lambda args: 0  # type: ignore[attr-defined]
    assert isinstance(mod, Command)
