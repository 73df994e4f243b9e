"""The package's layers hold: foundation -> kinds -> commands (docs/architecture.md draws them).

Every import is read from the source (ast), including imports inside functions and under
TYPE_CHECKING: a lazy import is still a dependency.  The foundation imports no kind or command;
kinds import no command; and no package takes another package's private names (`_name`)."""

from __future__ import annotations

import ast
from pathlib import Path

import jitterscope
from tests.support import source_ast

PKG = Path(jitterscope.__file__).resolve().parent

# The foundation: what every reader and writer of runs stands on.  Top-level modules and packages.
FOUNDATION = frozenset(
    {
        "__init__",
        "atomic",
        "bootcache",
        "boundedio",
        "budget",
        "buildinfo",
        "childgroup",
        "config",
        "errors",
        "humanize",
        "journal",
        "kinds",
        "lazy",
        "knobs",
        "mounts",
        "native_bin",
        "native_child",
        "nopandas",
        "options",
        "outpath",
        "ownenv",
        "plotting",
        "progress",
        "runcheck",
        "rundir",
        "session",
        "sysinfo",
        "tracing",
        "units",
    }
)
# Written when the package is built (buildinfo.py), absent from a checkout: foundation too.
GENERATED = frozenset({"_build_info"})
# The commands: argument parsing and rendering; nothing below imports them.
COMMANDS = frozenset({"cli", "__main__", "entry", "commands"})


def top_level() -> set[str]:
    """Every top-level module (without .py) and package of jitterscope."""
    out = {p.stem for p in PKG.glob("*.py")}
    out |= {p.name for p in PKG.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    return out


def kinds_layer() -> set[str]:
    """The middle layer: the run kinds' packages and the analyses over runs (all that is neither)."""
    return top_level() - FOUNDATION - GENERATED - COMMANDS


def layer(unit: str) -> str:
    return "foundation" if unit in FOUNDATION | GENERATED else "commands" if unit in COMMANDS else "kinds"


RANK = {"foundation": 0, "kinds": 1, "commands": 2}


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for f in PKG.rglob("*.py"):
        parts = ["jitterscope", *f.relative_to(PKG).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


MODULES = modules()


def unit_of(module: str) -> str:
    """The top-level module or package a dotted name belongs to (`jitterscope.measure.build` -> measure)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) for every import in the file: `import a.b` -> (.., "a.b", None),
    `from a import b` -> (.., "a", "b"), and (.., "a.b", None) too when a.b is a module."""
    out: list[tuple[int, str, str | None]] = []
    for node in source_ast.nodes(path):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}:{node.lineno}: relative import (the layer test reads absolute ones)"
            for a in node.names:
                out.append((node.lineno, node.module, a.name))
                if f"{node.module}.{a.name}" in MODULES:
                    out.append((node.lineno, f"{node.module}.{a.name}", None))
    return [i for i in out if i[1] == "jitterscope" or i[1].startswith("jitterscope.")]


def test_the_layer_lists_name_real_modules() -> None:
    gone = (FOUNDATION | COMMANDS) - top_level()
    assert not gone, f"the layer lists name modules that are gone: {sorted(gone)}"
    assert "rundir" in FOUNDATION and "measure" in kinds_layer() and "commands" in COMMANDS


def test_no_layer_imports_a_layer_above_it() -> None:
    bad = []
    for module, path in MODULES.items():
        here = unit_of(module)
        for line, target, name in imports(path):
            targets = [unit_of(target)] if target != "jitterscope" else [n for n in [name] if n in top_level()]
            for there in targets:
                if RANK[layer(there)] > RANK[layer(here)]:
                    bad.append(f"{path.relative_to(PKG)}:{line}: {layer(here)} imports {layer(there)} ({there})")
    assert not bad, "layering broken (foundation -> kinds -> commands):\n" + "\n".join(sorted(set(bad)))


def _private(name: str | None) -> bool:
    return bool(name) and name.startswith("_") and not name.startswith("__")  # type: ignore[union-attr]


def _module_aliases(path: Path) -> dict[str, str]:
    """Local name -> jitterscope module, for every module bound by an import in the file."""
    out = {}
    for node in source_ast.nodes(path):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES and a.asname:
                    out[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if f"{node.module}.{a.name}" in MODULES:
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def test_no_package_takes_another_packages_private_names() -> None:
    bad = []
    for module, path in MODULES.items():
        here = unit_of(module)
        for line, target, name in imports(path):
            if _private(name) and unit_of(target) != here:
                bad.append(f"{path.relative_to(PKG)}:{line}: from {target} import {name}")
        aliases = _module_aliases(path)
        for node in source_ast.nodes(path):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr):
                target = aliases.get(node.value.id)
                if target and unit_of(target) != here:
                    bad.append(f"{path.relative_to(PKG)}:{node.lineno}: {node.value.id}.{node.attr} ({target})")
    assert not bad, (
        "private names used across packages (make what two packages share public, in a module both may import):\n"
        + "\n".join(bad)
    )


def test_the_test_sees_a_lazy_import(tmp_path: Path) -> None:
    """The reader finds an import inside a function and under TYPE_CHECKING (it cannot pass by missing them)."""
    f = tmp_path / "m.py"
    f.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from jitterscope.sync import schema\n"
        "def f():\n    from jitterscope.measure.lifecycle import measure\n    import jitterscope.place.build\n"
    )
    found = {(t, n) for _, t, n in imports(f)}
    assert ("jitterscope.sync.schema", None) in found
    assert ("jitterscope.measure.lifecycle", "measure") in found
    assert ("jitterscope.place.build", None) in found
